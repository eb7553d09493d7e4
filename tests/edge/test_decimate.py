"""24 -> 8 kHz for the VAD: speech-band audio passes, what would alias is stopped, and a stream
decimated chunk by chunk (each row with its history) is the same as decimated whole."""

from __future__ import annotations

import numpy as np

from edge.audio.decimate import FACTOR, HISTORY, decimate
from edge.shared.protocols import CHUNK, RATE


def _tone(hz: float, seconds: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return np.sin(2 * np.pi * hz * t).astype(np.float32)


def _whole(samples: np.ndarray) -> np.ndarray:
    rows = np.concatenate([np.zeros(HISTORY, np.float32), samples])[None]
    return decimate(np.ascontiguousarray(rows))[0]


def test_speech_band_passes_and_aliases_are_stopped() -> None:
    def gain(hz: float) -> float:
        out = _whole(_tone(hz))[200:]  # (past the filter's start)
        return float(np.sqrt(2 * np.mean(out**2)))

    assert all(0.9 < gain(hz) < 1.1 for hz in (200, 1000, 2500))
    # Above 8 kHz's Nyquist these would fold back into the band Silero listens to.
    assert all(gain(hz) < 0.05 for hz in (5000, 7000, 10_000))


def test_chunks_with_history_equal_the_whole_stream() -> None:
    rng = np.random.default_rng(3)
    samples = rng.standard_normal(CHUNK * 12).astype(np.float32)
    whole = _whole(samples)
    # A batch of three streams, each at a different point of the same signal, chunk by chunk.
    starts = [0, 4, 8]
    history = np.zeros((3, HISTORY), np.float32)
    got: list[list[np.ndarray]] = [[], [], []]
    for k in range(4):
        rows = np.empty((3, HISTORY + CHUNK), np.float32)
        for i, s in enumerate(starts):
            rows[i, :HISTORY] = history[i] if k else (samples[s * CHUNK - HISTORY : s * CHUNK] if s else 0)
            rows[i, HISTORY:] = samples[(s + k) * CHUNK : (s + k + 1) * CHUNK]
        out = decimate(rows)
        assert out.shape == (3, CHUNK // FACTOR)
        history = rows[:, -HISTORY:].copy()
        for i in range(3):
            got[i].append(out[i])
    for i, s in enumerate(starts):
        expected = whole[s * CHUNK // FACTOR : (s + 4) * CHUNK // FACTOR]
        np.testing.assert_allclose(np.concatenate(got[i]), expected, atol=1e-5)
