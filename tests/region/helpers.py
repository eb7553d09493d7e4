"""Small helpers for region tests: speech fixtures as PCM16, word sets, and the bad-input cases that
both the real region (``test_bad_input.py``) and the stand-in session (``test_session_turns.py``) get."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from wire.audio import float_to_pcm16, read_wav
from wire.turn import Message, TurnStart, encode


def wav_pcm16(path: Path) -> bytes:
    samples, rate = read_wav(path)
    assert rate == 16_000, "the speech fixture makes 16 kHz WAVs for regions"
    return float_to_pcm16(samples)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))


def start(turn_id: str, **fields: Any) -> str:
    """An encoded ``turn.start``."""
    return encode(TurnStart(turn_id=turn_id, **fields))


SECOND = b"\x00\x00" * 16_000
"""One second of 16 kHz PCM16 silence."""
N = len(SECOND)
BAD_FIELD = json.dumps({"type": "turn.start", "turn_id": "x", "history": "hi"})

# (name, frames to send, expected error code)
BAD_INPUT: list[tuple[str, list[str | bytes], str]] = [
    ("malformed JSON", ['{"type": "turn.start", "turn_id": '], "invalid_event"),
    ("unknown type", [json.dumps({"type": "turn.launch", "turn_id": "x"})], "invalid_event"),
    ("missing turn_id", [json.dumps({"type": "turn.start"})], "invalid_event"),
    ("wrong field type", [BAD_FIELD], "invalid_event"),
    ("wrong audio format", [start("fmt", audio_bytes=N, audio_format="opus"), SECOND], "invalid_audio"),
    ("wrong sample rate", [start("rate", audio_bytes=N, sample_rate=8000), SECOND], "invalid_audio"),
    ("odd byte count", [start("odd", audio_bytes=3), b"\x00\x01\x02"], "invalid_audio"),
    ("empty audio", [start("empty")], "invalid_audio"),
    ("empty audio frame", [start("empty-frame", audio_bytes=2), b""], "invalid_audio"),
    ("size differs from announced", [start("size", audio_bytes=N), SECOND[:1000]], "invalid_audio"),
    ("audio too long", [start("long", audio_bytes=31 * N), 31 * SECOND], "invalid_audio"),
    ("unknown voice", [start("voice", text="Hi.", voice="af_nobody")], "unknown_voice"),
    (
        "history too long (messages)",
        [start("hist", text="Hi.", history=[Message(role="user", content="x")] * 65)],
        "history_too_long",
    ),
    (
        "history too long (characters)",
        [start("hist-chars", text="Hi.", history=[Message(role="user", content="x" * 33_000)])],
        "history_too_long",
    ),
    ("text too long", [start("text", text="word " * 1000)], "text_too_long"),
    ("audio without turn.start", [SECOND], "invalid_event"),
]
