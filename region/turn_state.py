"""One turn's inputs and results as the pipeline sees them (``Turn``), and the models it runs
through (``Stages``). The pipelines (``region.pipeline``, ``region.streaming``) hold no state of
their own: everything comes from these two.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from opentelemetry.trace import INVALID_SPAN, Span

from region.cancel import CancelToken
from region.cpu_order import UNORDERED, CpuOrder
from region.live_first import LiveFirst
from region.playout import Playout, SynthRate
from region.protocols import EndOfTurnModel, LlmClient, SpeechToText, TextToSpeech
from region.tools import check_call
from region.workload import Workload
from wire.audio import FloatAudio
from wire.client import ClauseAudio
from wire.text import ClauseChunker
from wire.turn import TextDelta, TokenUsage, ToolCall, ToolCalls, Transcript, TurnStart

PipelineEvent = Transcript | TextDelta | ClauseAudio | ToolCalls


def answers_unprompted(start: TurnStart) -> bool:
    """A turn whose typed text is empty (and has no audio) has no user words: it is answered from the
    instructions and the history alone (a greeting: the edge's ``response.create`` with nothing
    pending), with no transcript. Silence in a turn's audio, by contrast, gets no answer."""
    return start.text is not None and not start.text.strip() and start.audio_bytes == 0


@dataclass
class Turn:
    """One turn's inputs and what it has produced so far (read after a cancel, too)."""

    start: TurnStart
    audio: FloatAudio | None = None
    """16 kHz mono float samples, when the turn carries speech."""
    cancel: CancelToken = field(default_factory=CancelToken)
    transcript: str = ""
    text: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    t0: float = field(default_factory=time.perf_counter)
    calls: list[ToolCall] = field(default_factory=list)
    """The function calls of the answer, checked."""
    usage: TokenUsage | None = None
    """The LLM's token count, when it gave one (``TurnDone.usage``)."""
    gives_way: LiveFirst | None = None
    """A batch turn's: each clause waits for live turns, and one arriving stops it (said again)."""
    span: Span = INVALID_SPAN
    """The turn's span (``region/tracing.py``): each mark is an event on it."""
    playout: Playout = field(default_factory=Playout)
    """When its caller runs out of the audio sent so far (``region.playout``)."""

    def call(self, call: ToolCall) -> None:
        """A whole call from the LLM: kept when valid, ``InvalidToolCall`` otherwise."""
        check_call(call, self.start.tools)
        self.calls.append(call)

    def calls_event(self) -> ToolCalls | None:
        return ToolCalls(turn_id=self.start.turn_id, calls=list(self.calls)) if self.calls else None

    def mark(self, name: str, since: float | None = None) -> None:
        """Record ``name`` as seconds since ``since`` (default: the turn's start), once."""
        if name not in self.timings:
            self.timings[name] = round(time.perf_counter() - (self.t0 if since is None else since), 4)
            if self.span.is_recording():  # not once the turn's span has ended (a mark after a cancel)
                self.span.add_event(name, {"seconds": self.timings[name]})


@dataclass
class Stages:
    """The models a turn runs through (``region.backends.build_stages`` builds the real ones)."""

    stt: SpeechToText
    llm: LlmClient
    tts: TextToSpeech
    chunker: Callable[[], ClauseChunker] = ClauseChunker
    first_leg_tokens: int = 0
    """Decode an answer's first this-many tokens, then hold until its first clause is synthesised
    (``region.legs``; 0: one request, no hold)."""
    workload: Workload = field(default_factory=Workload)
    """What the models are doing (``region.workload``), shared with them."""
    order: CpuOrder = field(default_factory=lambda: CpuOrder(UNORDERED))
    """Which STT or TTS run goes next (``region.cpu_order``): first audio first. The default lets
    every run in at once."""
    first_audio_hold_s: float = 0.0
    """The longest an answer's first audio is held for the next clause to keep up (0: never)."""
    synth_rate: SynthRate = field(default_factory=SynthRate)
    """The region's measured seconds of synthesis per character: when a later clause must start."""
    end_of_turn: EndOfTurnModel | None = None
    """Asked for a turn that wants its transcript's end-of-turn probability (``None``: never given)."""
