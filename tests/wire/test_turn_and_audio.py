"""The shared wire package: protocol round trips, validation, and audio conversion."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from wire.audio import Resampler, float_to_pcm16, pcm16_to_float, resample
from wire.turn import (
    Message,
    TextDelta,
    TurnDone,
    TurnStart,
    decode_client,
    decode_region,
    encode,
)


def test_turn_start_round_trip() -> None:
    start = TurnStart(
        turn_id="t1",
        voice="jf_alpha",
        history=[Message("user", "hi"), Message("assistant", "hello")],
        text="x",
    )
    assert decode_client(encode(start)) == start


def test_region_events_are_tagged() -> None:
    assert decode_region(encode(TextDelta(turn_id="t", delta="Hi"))) == TextDelta(turn_id="t", delta="Hi")
    done = decode_region('{"type":"turn.done","turn_id":"t","region":"a","status":"completed"}')
    assert isinstance(done, TurnDone) and done.status == "completed"


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'{"type":"turn.launch","turn_id":"x"}',
        b'{"type":"turn.start"}',
        b'{"type":"turn.start","turn_id":5}',
        b'{"type":"turn.start","turn_id":"x","history":[{"role":"robot","content":"x"}]}',
    ],
)
def test_bad_client_messages_raise_msgspec_errors(raw: bytes) -> None:
    with pytest.raises((msgspec.ValidationError, msgspec.DecodeError)):
        decode_client(raw)


def test_pcm16_round_trip() -> None:
    x = np.sin(np.linspace(0, 40, 2400)).astype(np.float32) * 0.5
    back = pcm16_to_float(float_to_pcm16(x))
    assert np.max(np.abs(back - x)) < 1e-4


def _tone(rate: int, hz: float, seconds: float) -> np.ndarray:
    t = np.arange(int(rate * seconds)) / rate
    return (0.5 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def test_resample_keeps_pitch_and_removes_alias() -> None:
    # 1 kHz survives 24k->16k; 11 kHz (above the new Nyquist) must be filtered, not folded back.
    for hz, keep in ((1000.0, True), (11000.0, False)):
        out = resample(_tone(24_000, hz, 1.0), 24_000, 16_000)
        assert abs(len(out) - 16_000) <= 1
        rms = float(np.sqrt(np.mean(out[1000:-1000] ** 2)))
        assert (rms > 0.3) if keep else (rms < 0.01), (hz, rms)


def test_streaming_resampler_matches_batch() -> None:
    x = _tone(24_000, 440.0, 1.0)
    stream = Resampler(24_000, 16_000)
    chunks = [stream.process(x[i : i + 960]) for i in range(0, len(x), 960)]
    chunks.append(stream.process(np.zeros(0, dtype=np.float32), last=True))
    y = np.concatenate(chunks)
    assert abs(len(y) - 16_000) <= 2
    ref = resample(x, 24_000, 16_000)
    n = min(len(y), len(ref))
    assert float(np.max(np.abs(y[200 : n - 200] - ref[200 : n - 200]))) < 0.02
