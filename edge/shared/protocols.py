"""What an edge session needs from its models, as small Protocols (the real ones are wired in
``EdgeServices.build``, the composition root; in-memory stand-ins live in ``edge.testing``).

* ``Vad``: speech probabilities for each session's audio, 32 ms of its input buffer (24 kHz) at a
  time (``edge.audio.vad.VadBatcher``: batched Silero at 8 kHz).
* ``FallbackSpeaker``: the edge's own voice for turns no region can finish
  (``edge.audio.fallback_voice.FallbackVoice``: Piper).
* The router is ``router.api.TurnRouter``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

import numpy as np
import numpy.typing as npt

RATE = 24_000
"""Of a session's input buffer: the client's PCM rate, so PCM is buffered as it comes (16 kHz for STT
is made once per turn, at commit; ``edge/audio/input_audio.py``)."""
CHUNK = 768
"""Samples per VAD chunk (32 ms at ``RATE``)."""
CHUNK_MS = CHUNK * 1000 // RATE

F32 = npt.NDArray[np.float32]


class ChunkSource(Protocol):
    """Where a VAD stream reads its next chunk and hands back its answer: a session's input audio."""

    def next_chunk(self) -> F32:
        """The next ``CHUNK`` samples (``RATE`` float32), read when the VAD runs them."""
        ...

    def heard(self, probability: float) -> None:
        """That chunk's speech probability."""
        ...

    def failed(self, exc: Exception) -> None:
        """The VAD could not run that chunk."""
        ...


class SpeechProbability(Protocol):
    """One session's VAD: its chunks go in order (the model keeps state between them), one at a
    time: the next is pushed once the last one was heard."""

    def push(self, source: ChunkSource) -> None:
        """Run ``source``'s next chunk: its answer comes by ``heard`` (or ``failed``), later, never
        within this call. Pushed, not awaited: a session's append returns at once, and a chunk
        costs no future and no wake-up of the session's task (docs/benchmarks.md)."""
        ...


class Vad(Protocol):
    """The VAD shared by every session of an edge process."""

    def stream(self) -> SpeechProbability:
        """A new session's VAD stream."""
        ...

    def status(self) -> dict[str, object]:
        """A JSON-ready snapshot for the edge's ``/status``."""
        ...

    async def aclose(self) -> None: ...


class FallbackSpeaker(Protocol):
    """A voice at the edge itself, for turns no region can finish."""

    async def load(self) -> None:
        """Get ready to speak (the edge calls it at startup, so the first degraded turn is not slow)."""
        ...

    def speak(self, text: str) -> AsyncIterator[tuple[str, bytes]]:
        """Yield ``(sentence, 24 kHz PCM16)`` one sentence at a time."""
        ...


class TurnModel(Protocol):
    """Whether a user's turn is complete, from its audio (``semantic_vad``): shared by every session."""

    async def complete(self, pcm16k: bytes) -> float:
        """Probability that the turn whose 16 kHz PCM16 audio this is (up to now) is complete."""
        ...

    async def aclose(self) -> None: ...
