"""The region turn protocol: what an edge (through its router) and a region say to each other.

One WebSocket connection to ``/v1/turns`` carries one turn at a time, and many turns in sequence,
so a router can keep connections warm. Control messages are JSON text frames, tagged by ``type``.
Audio travels as binary frames, never base64:

edge -> region
    ``turn.start``  then, if ``audio_bytes > 0``, exactly one binary frame: 16 kHz mono PCM16
    ``turn.cancel`` at any time (barge-in); the region answers with ``turn.done`` (cancelled)

region -> edge, in this order
    ``turn.queued``* (position, estimated wait) while waiting for a slot
    ``turn.admitted`` when a slot is taken (or ``turn.rejected`` when slots and queue are full)
    ``transcript``    what the user said
    ``text.delta``*   the assistant's text as it is generated
    ``audio.clause``* a clause's text, then one binary frame: 24 kHz mono PCM16 of that clause
                      (none when ``output_audio`` is false: a text-only answer, no synthesis)
    ``tool_calls``    at most one, after the audio of every clause before it: the function calls
                      that end the answer, each complete and valid against its tool's schema
    ``turn.done``     status and per-stage timings
    ``error``         a request the region cannot act on; the connection stays usable

Regions keep no conversation state: a turn carries its history, voice and instructions. A turn
that fails over mid-answer carries ``transcript`` (skip STT) and ``heard_text`` (the part of the
answer the user already heard): the next region continues after it without repeating it.

Function calling: ``turn.start`` carries the client's ``tools`` (name, description, JSON-schema
``parameters``) and ``tool_choice``; its history carries earlier calls (an assistant message with
``tool_calls``) and their results (role ``tool`` with ``tool_call_id``), in OpenAI's chat shape. A
region sends a turn's calls once, all together and only once they are whole and valid, so a region
dying mid-call has sent nothing of it (the next region writes it again), and a call that reached
the edge is never sent twice. Call ids on the client's side are the edge's: a region's ``id`` is
its own. Arguments that do not validate end the turn with an ``invalid_tool_call`` error.

A turn with ``transcribe_only`` runs STT alone: ``transcript`` then ``turn.done`` (no LLM, no TTS);
the edge asks for one when a client wants the transcript of audio no response answers. Its
``transcript`` carries timed ``segments`` (``POST /v1/audio/transcriptions``' ``verbose_json``).

A turn with ``speak_text`` only reads that text aloud (``POST /v1/audio/speech``): no STT, no LLM;
one ``text.delta`` with the text still to speak, then its clauses' ``audio.clause``. On failover
``heard_text`` holds the clauses already delivered: the next region skips them, clause by clause.

A turn with ``end_of_turn`` (the edge's turn started at a pause under ``semantic_vad``) also gets how
likely its words end the user's turn, on its ``transcript`` (``Transcript.end_of_turn``: the region's
LLM, ``region/end_of_turn.py``); other turns pay nothing for it. Both fields are optional: an edge or a
region that does not know them ignores them.

A turn with ``custom_voice`` speaks with that definition (a blend of the region's voice styles or
an uploaded style vector), not ``voice``: custom voices live at the edge, and travel with turns.
"""

from __future__ import annotations

from typing import Any, Literal, cast

import msgspec

from wire.voices import CustomVoice

TURN_PATH = "/v1/turns"

Priority = Literal["high", "normal", "low", "batch"]
"""A turn's class in a region's queue (the first three are ``edge.shared.key_policy.Priority``'s names);
``batch`` is a speech batch's item, run only on capacity live turns leave idle
(``region.live_first``)."""


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One function call: ``arguments`` is JSON text (an object), as OpenAI's chat API carries it."""

    id: str
    name: str
    arguments: str


class Message(msgspec.Struct, frozen=True, omit_defaults=True):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant message's function calls (``content`` is then often empty)."""
    tool_call_id: str | None = None
    """A ``tool`` message: the call whose result ``content`` is."""


class Tool(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A function the model may call; ``parameters`` is the JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)


class NamedTool(msgspec.Struct, frozen=True, kw_only=True):
    """``tool_choice`` forcing one function."""

    name: str


ToolChoice = Literal["auto", "none", "required"] | NamedTool


class TurnStart(msgspec.Struct, tag="turn.start", tag_field="type", kw_only=True):
    turn_id: str
    voice: str = ""
    instructions: str = ""
    history: list[Message] = msgspec.field(default_factory=list)
    text: str | None = None
    """The user's typed words. ``""`` with no audio: no user words at all (a greeting), answered from
    the instructions and the history."""
    audio_bytes: int = 0
    audio_format: str = "pcm16"
    sample_rate: int = 16_000
    transcript: str | None = None
    heard_text: str = ""
    max_output_tokens: int = 200
    temperature: float = 0.7
    output_audio: bool = True
    """``False``: a text-only answer (``text.delta`` and ``turn.done``, no ``audio.clause``): no
    synthesis is spent. ``heard_text`` is then the text the client was shown."""
    transcribe_only: bool = False
    """Only transcribe the audio (or echo ``transcript``): ``transcript`` then ``turn.done``."""
    tools: list[Tool] = msgspec.field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    """Ignored without ``tools``."""
    priority: Priority = "normal"
    """The caller's class in the region's admission queue: ``high`` waits before ``normal`` before
    ``low`` (FIFO within a class). The edge sets it from the key (``edge/shared/key_policy.py``), or to
    ``batch`` for a speech batch's item (``speak_text`` turns only)."""
    speak_text: str | None = None
    """Read this text aloud, nothing else (a speak-only turn: no STT, no LLM)."""
    speed: float = 1.0
    """Speaking rate for the TTS, 0.25 to 4.0 (OpenAI's ``speed``)."""
    language: str = ""
    """A ``transcribe_only`` turn's language (ISO-639-1); ``""``: the region's setting."""
    prompt: str = ""
    """A ``transcribe_only`` turn's prompt for Whisper (words and style to expect)."""
    timestamps: bool = True
    """A ``transcribe_only`` turn's segments with their times (``verbose_json``); off, Whisper decodes
    the words alone, as in an answered turn. The backchannel gate's is off: a hummed "mm-hm" after
    its prompt was "Let's go." in 12 of 12 timed decodes, "Mm-hm."/"Uh-huh." in 11 of 12 untimed."""
    custom_voice: CustomVoice | None = None
    """Speak with this custom voice's definition instead of ``voice`` (``wire/voices.py``): the turn
    carries it, so every region has it, and a failover keeps it."""
    end_of_turn: bool = False
    """Also say how likely the user's words end their turn (``Transcript.end_of_turn``): the edge asks
    it of a turn started at a pause under ``semantic_vad`` (``edge/realtime/semantic_turns.py``)."""
    traceparent: str | None = None
    """The W3C trace context of the router's attempt (``wire/tracing.py``): the region's spans join the
    turn's trace. ``None``: not traced (or a caller that does not trace)."""

    @property
    def is_batch(self) -> bool:
        """A speech batch's item: it waits for live turns, and says nothing of what callers wait for."""
        return self.priority == "batch"


class TurnCancel(msgspec.Struct, tag="turn.cancel", tag_field="type", kw_only=True):
    turn_id: str


class TurnQueued(msgspec.Struct, tag="turn.queued", tag_field="type", kw_only=True):
    turn_id: str
    position: int
    estimated_wait_s: float


class TurnAdmitted(msgspec.Struct, tag="turn.admitted", tag_field="type", kw_only=True):
    turn_id: str
    region: str
    queued_s: float = 0.0


class TurnRejected(msgspec.Struct, tag="turn.rejected", tag_field="type", kw_only=True):
    turn_id: str
    region: str
    code: str = "busy"
    message: str = ""
    retry_after_s: float = 0.0


class Segment(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A timed stretch of a transcript (seconds from the start of the turn's audio)."""

    start: float
    end: float
    text: str
    avg_logprob: float = 0.0
    no_speech_prob: float = 0.0


class Transcript(msgspec.Struct, tag="transcript", tag_field="type", kw_only=True, omit_defaults=True):
    turn_id: str
    text: str
    segments: list[Segment] = msgspec.field(default_factory=list)
    """Only for a ``transcribe_only`` turn (empty otherwise: nobody reads them)."""
    end_of_turn: float | None = None
    """The LLM's probability that ``text`` ends the user's turn (``region/end_of_turn.py``), for a turn
    that asked (``TurnStart.end_of_turn``); ``None``: not asked, or the LLM gave no answer."""


class TextDelta(msgspec.Struct, tag="text.delta", tag_field="type", kw_only=True):
    turn_id: str
    delta: str


class AudioClause(msgspec.Struct, tag="audio.clause", tag_field="type", kw_only=True):
    """Announces the binary frame that follows: the audio of ``text``."""

    turn_id: str
    index: int
    text: str
    sample_rate: int = 24_000
    audio_bytes: int = 0


class ToolCalls(msgspec.Struct, tag="tool_calls", tag_field="type", kw_only=True):
    """The function calls that end the answer, whole and validated, sent once."""

    turn_id: str
    calls: list[ToolCall]


class TokenUsage(msgspec.Struct, frozen=True, kw_only=True):
    """Tokens the LLM counted for one turn (vLLM's ``usage``): the prompt and the answer."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class TurnDone(msgspec.Struct, tag="turn.done", tag_field="type", kw_only=True):
    turn_id: str
    region: str
    status: Literal["completed", "cancelled", "failed"]
    transcript: str = ""
    text: str = ""
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    error: str | None = None
    usage: TokenUsage | None = None
    """The LLM's own token count of this region's part of the turn; ``None``: no LLM ran (or, after
    a failover, the region that died counted nothing the edge can see)."""


class TurnError(msgspec.Struct, tag="error", tag_field="type", kw_only=True):
    code: str
    message: str
    turn_id: str | None = None


ClientMessage = TurnStart | TurnCancel
RegionMessage = (
    TurnQueued
    | TurnAdmitted
    | TurnRejected
    | Transcript
    | TextDelta
    | AudioClause
    | ToolCalls
    | TurnDone
    | TurnError
)

_encoder = msgspec.json.Encoder()
_client_decoder = msgspec.json.Decoder(ClientMessage)
_region_decoder = msgspec.json.Decoder(RegionMessage)


def encode(msg: ClientMessage | RegionMessage) -> str:
    return _encoder.encode(msg).decode()


def decode_client(data: str | bytes) -> ClientMessage:
    """Decode an edge->region message; raises ``msgspec.ValidationError``/``DecodeError``."""
    return cast(ClientMessage, _client_decoder.decode(data))


def decode_region(data: str | bytes) -> RegionMessage:
    return cast(RegionMessage, _region_decoder.decode(data))
