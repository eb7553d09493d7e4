"""Small helpers for region tests: speech fixtures as PCM16, word sets, the bad-input cases that
both the real region (``test_bad_input.py``) and the stand-in session (``test_session_turns.py``) get,
and a TTS and a synthesis rate with set timings for the clause-schedule tests."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from region.cancel import CancelToken
from region.playout import SynthRate
from region.testing import Hold, ToneTts
from wire.audio import REGION_OUT_RATE, FloatAudio, float_to_pcm16, read_wav
from wire.turn import Message, TurnStart, encode
from wire.voices import CustomVoice


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


class TimedTts(ToneTts):
    """Audio of ``seconds`` per clause; the clauses in ``holds`` wait for their hold first."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.holds = {"Charlie one.": Hold()}

    async def synthesize(
        self, text: str, voice: str | CustomVoice, cancel: CancelToken, *, speed: float = 1.0
    ) -> FloatAudio:
        self.asked.append(text)
        if (hold := self.holds.get(text)) is not None:
            await hold.wait(cancel)
        return np.zeros(int(self.seconds * REGION_OUT_RATE), dtype=np.float32)


class SlowKokoro(SynthRate):
    """The region's measured rate, fixed at a tenth of a second per character (a loaded Kokoro):
    the stand-in's instant runs would otherwise teach it that synthesis takes no time."""

    def update(self, chars: int, seconds: float, now: float | None = None) -> None:
        pass

    def expected_s(self, text: str) -> float:
        return 0.1 * len(text)
