"""Small helpers for talking to a real region in tests."""

from __future__ import annotations

import re
from pathlib import Path

from wire.audio import float_to_pcm16, read_wav


def wav_pcm16(path: Path) -> bytes:
    samples, rate = read_wav(path)
    assert rate == 16_000, "the speech fixture makes 16 kHz WAVs for regions"
    return float_to_pcm16(samples)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))
