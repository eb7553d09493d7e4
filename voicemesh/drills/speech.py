"""Real speech for synthetic callers: espeak-ng sentences in several voices, at the client rate.

Each utterance is synthesised once and cached as 24 kHz mono PCM16 (the Realtime wire format), with
the leading/trailing silence espeak-ng adds trimmed off, so "end of speech" is a known sample.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voicemesh.speech import espeak
from wire.audio import CLIENT_RATE, float_to_pcm16
from wire.files import atomic_write

SENTENCES = (
    "What is the capital city of France?",
    "Tell me a short fact about the moon.",
    "How many days are there in a week?",
    "Can you suggest a name for a small black cat?",
    "What colour is the sky on a clear day?",
    "Give me one tip for sleeping better.",
)
VOICES = ("en-us", "en-gb", "en-us+f3", "en-gb-x-rp")


@dataclass(frozen=True, slots=True)
class Utterance:
    text: str
    voice: str
    pcm: bytes
    """24 kHz mono PCM16, speech only (silence trimmed)."""

    @property
    def duration_s(self) -> float:
        return len(self.pcm) / 2 / CLIENT_RATE


def _trim(samples: np.ndarray, threshold: float = 0.01) -> np.ndarray:
    loud = np.flatnonzero(np.abs(samples) > threshold)
    return samples if loud.size == 0 else samples[loud[0] : loud[-1] + 1]


def synthesise(text: str, voice: str, cache_dir: Path) -> Utterance:
    """espeak-ng ``text`` in ``voice`` (cached by content); blocking, so callers run it in a thread."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(f"{voice}|{text}".encode()).hexdigest()[:16]
    out = cache_dir / f"{key}.pcm"
    if not out.exists():
        pcm = float_to_pcm16(_trim(espeak(text, CLIENT_RATE, voice=voice, speed=155)) * 0.8)
        atomic_write(out, pcm)
    return Utterance(text=text, voice=voice, pcm=out.read_bytes())


def _corpus(cache_dir: Path, sentences: tuple[str, ...], voices: tuple[str, ...]) -> list[Utterance]:
    return [synthesise(text, voices[i % len(voices)], cache_dir) for i, text in enumerate(sentences)]


async def corpus(
    cache_dir: Path, sentences: tuple[str, ...] = SENTENCES, voices: tuple[str, ...] = VOICES
) -> list[Utterance]:
    """Every sentence once, voices rotating, so callers hear different speakers and words."""
    return await asyncio.to_thread(_corpus, cache_dir, sentences, voices)
