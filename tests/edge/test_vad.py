"""Batched Silero VAD: one model call serves every session's pending chunk, with the same results as
running each stream alone; and the turn detector turns them into speech start/stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from edge.audio.turn_detector import SpeechStarted, SpeechStopped, TurnDetector
from edge.audio.vad import CHUNK, CHUNK_MS, VadBatcher
from edge.shared.state import TurnDetection
from wire.audio import read_wav


@pytest.fixture(scope="module")
def utterance(speech: Callable[..., Path]) -> np.ndarray:
    samples, rate = read_wav(speech("Turn on the kitchen lights, please.", rate=24_000))
    assert rate == 24_000  # what an input buffer holds
    return samples[: len(samples) // CHUNK * CHUNK]


async def test_batched_vad_matches_per_stream_and_batches(
    models: dict[str, Path], utterance: np.ndarray
) -> None:
    batcher = VadBatcher(str(models["silero-vad"] / "silero_vad.onnx"))
    try:
        n_streams = 24
        chunks = utterance.reshape(-1, CHUNK)
        # Each stream starts at a different offset, so a batch mixes speech and silence.
        offsets = [(7 * i) % len(chunks) for i in range(n_streams)]

        async def run(offset: int) -> list[float]:
            stream = batcher.stream()
            order = np.roll(chunks, -offset, axis=0)
            return [await stream.probability(c) for c in order]

        together = await asyncio.gather(*(run(o) for o in offsets))
        stats = batcher.stats
        assert stats.chunks == n_streams * len(chunks)
        assert stats.largest > 1 and stats.calls < stats.chunks / 4, stats
        alone = [await run(o) for o in offsets[:3]]  # one stream at a time: batches of one
        for a, b in zip(alone, together[:3], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-4)
        probs = np.array(together[0])
        assert probs.max() > 0.8 and probs[:5].max() < 0.3  # speech found, leading silence not
    finally:
        await batcher.aclose()


def test_turn_detector_hysteresis_padding_and_silence() -> None:
    det = TurnDetector(TurnDetection(threshold=0.5, prefix_padding_ms=64, silence_duration_ms=96))
    probs = [0.1] * 5 + [0.9] * 10 + [0.4] * 2 + [0.9] + [0.1] * 3 + [0.1]
    events = [e for i, p in enumerate(probs) if (e := det.feed(p, i * CHUNK_MS)) is not None]
    # 0.4 is above threshold - 0.15: still speech; three quiet chunks (96 ms) end it.
    assert events == [SpeechStarted(5 * CHUNK_MS - 64), SpeechStopped(18 * CHUNK_MS)]
    det.config = TurnDetection(threshold=0.95, prefix_padding_ms=0, silence_duration_ms=96)
    assert det.feed(0.9, 1000) is None  # a session.update raising the threshold takes effect at once
