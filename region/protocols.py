"""What a region turn needs from its models, as small Protocols (the real ones are built in
``region.backends``; in-memory stand-ins live in ``region.testing``).

* ``SpeechToText``: 16 kHz speech -> text (``region.stt.Transcriber``: faster-whisper).
* ``LlmClient``: the answer to a turn, streamed as text deltas, then its function calls
  (``region.llm.VllmClient``: vLLM's OpenAI-compatible API over httpx).
* ``EndOfTurnModel``: how likely the user's words end their turn (``region.end_of_turn``: the LLM).
* ``TextToSpeech``: one clause -> 24 kHz audio (``region.tts.Synthesizer``: Kokoro on onnxruntime).

Cancelling a turn must stop every stage at once. STT and TTS run in worker threads, which asyncio
cancellation does not reach, so they take the turn's ``CancelToken`` and raise ``Cancelled`` soon
after it is set. The LLM stream is stopped by closing it (``aclose()``, or cancelling the task that
iterates it), which must abort the request rather than let it run on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from typing import Protocol

from region.cancel import CancelToken
from wire.audio import FloatAudio
from wire.errors import RegionError, UnknownVoice
from wire.turn import Segment, TokenUsage, ToolCall, TurnStart
from wire.voices import CustomVoice


class LlmError(RegionError):
    """The LLM could not be reached or answered with an error."""

    code = "llm_error"


class LlmUnreachable(LlmError):
    """The LLM's server refused the connection: its process is gone (dead, or not started yet)."""

    code = "llm_unreachable"


class Cut(TokenUsage, frozen=True, kw_only=True):
    """The usage a stream ends with when ``stop_after`` cut it short (``LlmClient.stream``): the
    tokens behind the text it yielded. Any other ``TokenUsage``: the answer ended by itself."""


class Model(Protocol):
    """A backend that must be loaded (and warmed) before the region reports itself ready."""

    @property
    def ready(self) -> bool: ...

    async def load(self) -> None:
        """Load and warm up, so the first real turn pays no start-up cost."""
        ...


class SpeechToText(Model, Protocol):
    async def transcribe(self, audio: FloatAudio, cancel: CancelToken) -> str:
        """16 kHz mono float audio -> text; raises ``Cancelled`` once ``cancel`` is set."""
        ...

    async def transcribe_timed(
        self, audio: FloatAudio, cancel: CancelToken, *, language: str = "", prompt: str = "",
        timestamps: bool = True,
    ) -> list[Segment]:  # fmt: skip
        """The same as segments (a ``transcribe_only`` turn), in ``language`` (``""``: the configured
        one) with Whisper's ``prompt``; timed unless ``timestamps`` is off."""
        ...


class LlmClient(Model, Protocol):
    @property
    def url(self) -> str:
        """Where the model is served (shown in ``/health`` and in start-up reports)."""
        ...

    def stream(
        self, start: TurnStart, user_text: str, *, stop_after: int = 0
    ) -> AsyncIterator[str | ToolCall | TokenUsage]:
        """The visible answer to ``user_text`` as it is generated, then (with ``start.tools``) the
        function calls it makes, each whole (the pipeline checks them: ``region.tools.check_call``),
        then the ``TokenUsage`` the server counted, if it did. After a failover
        (``start.heard_text``) it continues that text instead of starting a new answer, joined as
        one answer would be (a space before its first word). Closing the iterator aborts the
        request. ``stop_after`` (> 0): the request is checked and admitted whole, but once the
        server counted that many output tokens it is aborted where the next word starts, that word
        not yielded (so the text ends at a word's end, not with a space; at once while no text is
        visible yet); its usage is then a ``Cut`` (``region.legs``). Raises ``LlmError``."""
        ...

    async def check(self) -> None:
        """Raise ``LlmError`` (``LlmUnreachable``: connection refused) unless the server answers a
        cheap question now (no generation): ``region.llm_watch``'s probe."""
        ...

    async def aclose(self) -> None: ...


class EndOfTurnModel(Protocol):
    async def probability(self, start: TurnStart, user_text: str) -> float | None:
        """P(the user's turn ends after ``user_text``) (``region.end_of_turn``); ``None`` when there is
        no answer (any failure: the edge then decides without it)."""
        ...


class TextToSpeech(Model, Protocol):
    @property
    def voices(self) -> frozenset[str]:
        """The voices it speaks (empty until loaded)."""
        ...

    def resolve_voice(self, voice: str | CustomVoice) -> str:
        """The voice to speak with (the default when empty); ``UnknownVoice`` if there is none such
        (for a custom voice: a blend of a voice this region lacks), ``BadEvent`` for a custom voice
        that is no definition (``region.voice_styles.check_custom``)."""
        ...

    async def synthesize(
        self, text: str, voice: str | CustomVoice, cancel: CancelToken, *, speed: float = 1.0
    ) -> FloatAudio:
        """One clause -> float audio at 24 kHz (empty if nothing in it is speakable), spoken at
        ``speed`` times the voice's rate (a ``CustomVoice``: its blended or uploaded style); raises
        ``Cancelled`` soon after ``cancel`` is set."""
        ...


def choose_voice(voice: str, default: str, voices: Collection[str]) -> str:
    """``voice``, or ``default`` when empty; ``UnknownVoice`` when not among ``voices`` (an empty
    ``voices`` means not loaded yet: accept it, the synthesizer will judge)."""
    chosen = voice or default
    if voices and chosen not in voices:
        raise UnknownVoice(f"unknown voice {chosen!r}; this region speaks: {', '.join(sorted(voices))}")
    return chosen
