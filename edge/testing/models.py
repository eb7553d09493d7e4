"""Stand-ins for the edge's own models: ``EnergyVad`` for Silero, ``ToneVoice`` for Piper."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np

from edge.shared.protocols import RATE, ChunkSource, SpeechProbability
from edge.testing.audio import tone
from wire.text import split_sentences


class EnergyStream:
    """One session's stream of ``EnergyVad``."""

    def __init__(self, vad: EnergyVad) -> None:
        self._vad = vad

    def push(self, source: ChunkSource) -> None:
        self._vad.chunks += 1
        chunk = source.next_chunk()
        rms = float(np.sqrt(np.mean(np.square(chunk)))) if len(chunk) else 0.0
        asyncio.get_running_loop().call_soon(source.heard, 1.0 if rms >= self._vad.threshold else 0.0)


class EnergyVad:
    """A ``Vad`` that calls a chunk speech when its RMS reaches ``threshold`` (probability 1, else 0).

    It stands in for Silero where the VAD model is not what is under test (turn logic, barge-in,
    commits are): ``tone()`` is speech to it, ``silence()`` is not.
    """

    def __init__(self, threshold: float = 0.02) -> None:
        self.threshold = threshold
        self.chunks = 0

    def stream(self) -> SpeechProbability:
        return EnergyStream(self)

    def status(self) -> dict[str, object]:
        one = min(1, self.chunks)
        return {"rate": RATE, "calls": self.chunks, "chunks": self.chunks, "largest_batch": one}

    async def aclose(self) -> None:
        pass


class ToneVoice:
    """A ``FallbackSpeaker`` that speaks each sentence as a short tone.

    It stands in for Piper where the voice is not what is under test (what a degraded turn says and
    how it is marked are): sentences are split as the real voice splits them.
    """

    def __init__(self, seconds_per_sentence: float = 0.1) -> None:
        self.seconds = seconds_per_sentence
        self.loads = 0
        self.spoken: list[str] = []

    async def load(self) -> None:
        self.loads += 1

    async def speak(self, text: str) -> AsyncIterator[tuple[str, bytes]]:
        for sentence in split_sentences(text):
            self.spoken.append(sentence)
            yield sentence, tone(self.seconds, hz=220.0)
