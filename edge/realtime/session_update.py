"""A session's settings: the edge's defaults for a new one, ``session.update`` -> ``SessionState``,
and ``SessionState`` -> the ``session`` object clients see.

Every field is checked (``edge/shared/limits.py`` bounds) before any is applied; the first bad one raises
(``BadEvent`` / ``BadAudio``, ``InvalidParam`` naming the field), the caller answers with an
``error`` event, and the session stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
from openai.types.realtime.realtime_audio_input_turn_detection import ServerVad
from openai.types.realtime.realtime_session_create_request import RealtimeSessionCreateRequest
from openai.types.realtime.session_update_event import Session

from edge.audio.audio_formats import FORMATS
from edge.realtime.backchannel_rules import backchannel_flag
from edge.responses.response_tools import check_tool_choice, check_tools, tool_choice_object, tools_object
from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.limits import check_range, check_text, check_turn_detection, output_tokens
from edge.shared.settings import ContentLimits, EdgeSettings, VadSettings
from edge.shared.state import EAGERNESS_MS, InputTranscription, SessionState, TurnDetection
from edge.tenancy.session_tenancy import check_voice_allowed
from wire.errors import BadEvent
from wire.turn import NamedTool, Tool
from wire.voices import CustomVoice

T = TypeVar("T")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def initial_state(
    settings: EdgeSettings, *, key_id: str, model: str = "", voices: frozenset[str] | None = None
) -> SessionState:
    """A new session as the edge's settings configure it (server VAD on); with the key's ``voices``
    restricted, its first one unless the edge's default voice is among them."""
    vad = settings.vad
    voice = settings.default_voice
    if voices is not None and voice not in voices:
        voice = min(voices)
    return SessionState(
        id=new_id("sess"),
        key_id=key_id,
        model=model,
        voice=voice,
        instructions=settings.default_instructions,
        turn_detection=TurnDetection(
            threshold=vad.threshold,
            prefix_padding_ms=vad.prefix_padding_ms,
            silence_duration_ms=vad.silence_duration_ms,
            voicemesh_backchannel=vad.backchannel.enabled,
        ),
        created_at=time.time(),
    )


def session_object(state: SessionState) -> dict[str, Any]:
    """The ``session`` of ``session.created`` / ``session.updated``."""
    td = state.turn_detection
    return {
        "type": "realtime",
        "id": state.id,
        "object": "realtime.session",
        "model": state.model or None,
        "instructions": state.instructions,
        "output_modalities": state.output_modalities,
        "max_output_tokens": state.max_output_tokens,
        "tools": tools_object(state.tools),
        "tool_choice": tool_choice_object(state.tool_choice),
        "audio": {
            "input": {
                "format": FORMATS[state.input_audio_format].describe(),
                "turn_detection": turn_detection_object(td),
                "transcription": None
                if state.transcription is None
                else {k: v for k, v in msgspec.structs.asdict(state.transcription).items() if v is not None},
            },
            "output": {"format": FORMATS[state.output_audio_format].describe(), "voice": state.voice or None},
        },
    }


def turn_detection_object(td: TurnDetection | None) -> dict[str, Any] | None:
    """``audio.input.turn_detection`` as the client set it: ``server_vad`` or ``semantic_vad``."""
    if td is None:
        return None
    if td.eagerness is None:
        fields = msgspec.structs.asdict(td)
        del fields["eagerness"]  # (semantic_vad's alone)
        return {"type": "server_vad", **fields}
    return {
        "type": "semantic_vad",
        "eagerness": td.eagerness,
        "create_response": td.create_response,
        "interrupt_response": td.interrupt_response,
    }


def session_changes(
    state: SessionState, s: Session, settings: EdgeSettings, *, voices: frozenset[str] | None = None,
    custom: CustomVoice | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What one ``session.update``'s ``session`` changes in ``state``, as ``{field: new value}``;
    ``voices``: the only ones the session's key may use (``None``: any of the edge's); ``custom``:
    the definition of the custom voice it names, resolved (and its use allowed) by the caller.

    Every field is checked before anything changes: the first bad one raises and the caller leaves
    the session as it was (all or nothing)."""
    limits = settings.limits.content
    if s.type != "realtime":
        raise BadEvent("only `realtime` sessions are served here", code="unsupported_session_type")
    _check_unused_numbers(s, limits)
    changes: dict[str, Any] = {}
    if s.instructions is not None:
        check_text(s.instructions, "session.instructions", limits.max_instructions_chars)
        changes["instructions"] = s.instructions
    if s.output_modalities is not None:
        changes["output_modalities"] = output_modalities(s.output_modalities, "session.output_modalities")
    if s.max_output_tokens is not None:
        changes["max_output_tokens"] = output_tokens(s.max_output_tokens, limits)
    tools = state.tools
    if s.tools is not None:
        tools = changes["tools"] = check_tools(s.tools, "session.tools", limits)
    if s.tool_choice is not None:
        changes["tool_choice"] = check_tool_choice(s.tool_choice, tools, "session.tool_choice")
    elif s.tools is not None and not _still_chosen(state, tools):
        changes["tool_choice"] = "auto"  # the tool it forced is gone
    audio = s.audio
    if audio is not None and audio.output is not None:
        if (fmt := _audio_format(audio.output.format, "session.audio.output.format")) is not None:
            changes["output_audio_format"] = fmt
        if audio.output.voice is not None:
            voice = audio.output.voice
            voice = voice if isinstance(voice, str) else voice.id
            check_text(voice, "session.audio.output.voice", limits.max_voice_chars)
            if custom is None:
                # A voice no region speaks is refused here, not at a turn; the session keeps (and
                # echoes) the name asked for, mapped to a region voice per turn.
                settings.voices.region_voice(voice, param="session.audio.output.voice")
                check_voice_allowed(voice, voices, "session.audio.output.voice")
            changes["voice"] = voice
            changes["custom_voice"] = custom
    if audio is not None and audio.input is not None:
        if (fmt := _audio_format(audio.input.format, "session.audio.input.format")) is not None:
            changes["input_audio_format"] = fmt
        if "transcription" in audio.input.model_fields_set:
            changes["transcription"] = input_transcription(audio.input.transcription, limits)
        if "turn_detection" in audio.input.model_fields_set:
            changes["turn_detection"] = turn_detection(
                audio.input.turn_detection, state.turn_detection, settings.vad, limits
            )
    return changes


def _still_chosen(state: SessionState, tools: list[Tool]) -> bool:
    """Whether the session's ``tool_choice`` still makes sense with ``tools``."""
    choice = state.tool_choice
    if isinstance(choice, NamedTool):
        return any(t.name == choice.name for t in tools)
    return True


def output_modalities(modalities: Sequence[str], param: str) -> list[str]:
    """``["audio"]`` (audio and its transcript) or ``["text"]`` (text only, no synthesis). Both at
    once is answered as audio, which carries its text too (clients such as LiveKit's default ask
    for both)."""
    if not modalities:
        raise InvalidParam(f"{param} is empty: use ['audio'] or ['text']", param=param)
    return ["audio"] if "audio" in modalities else ["text"]


def speaks(modalities: list[str]) -> bool:
    """Whether responses with these output modalities are spoken (else text only)."""
    return "audio" in modalities


def input_transcription(t: Any, limits: ContentLimits) -> InputTranscription | None:
    """``audio.input.transcription`` (``None``: off). Any model name is accepted and echoed: the
    regions' own STT transcribes."""
    if t is None:
        return None
    param = "session.audio.input.transcription"
    for name, value, limit in (
        ("model", t.model, limits.max_voice_chars),
        ("language", t.language, limits.max_voice_chars),
        ("prompt", t.prompt, limits.max_instructions_chars),
    ):
        if value is not None:
            check_text(value, f"{param}.{name}", limit)
    return InputTranscription(model=t.model, language=t.language, prompt=t.prompt)


def _audio_format(fmt: Any, param: str) -> str | None:
    """A client's ``format`` as one the edge speaks (``FORMATS``); ``None``: left as it is."""
    if fmt is None or fmt.type is None:
        return None
    if fmt.type not in FORMATS:  # (the SDK's models already refuse most; a newer SDK may add some)
        raise InvalidParam(
            f"{param}: {fmt.type!r} is not supported: use one of {', '.join(FORMATS)}",
            param=param,
            code="unsupported_audio_format",
        )
    return str(fmt.type)


def _check_unused_numbers(s: RealtimeSessionCreateRequest, limits: ContentLimits) -> None:
    """Numeric fields the edge accepts without acting on them, bounded all the same (OpenAI's ranges)."""
    audio = s.audio
    if audio is not None and audio.output is not None and audio.output.speed is not None:
        check_range(audio.output.speed, "session.audio.output.speed", 0.25, 1.5)
    noise = audio.input.noise_reduction if audio is not None and audio.input is not None else None
    strength = getattr(noise, "strength", None)
    if isinstance(strength, int | float):
        check_range(strength, "session.audio.input.noise_reduction.strength", 0.0, 1.0)
    truncation = s.truncation
    if truncation is not None and not isinstance(truncation, str):
        check_range(truncation.retention_ratio, "session.truncation.retention_ratio", 0.0, 1.0)
        post = truncation.token_limits.post_instructions if truncation.token_limits else None
        if post is not None:
            param = "session.truncation.token_limits.post_instructions"
            check_range(post, param, 0, limits.context_tokens)


def turn_detection(
    td: Any, current: TurnDetection | None, defaults: VadSettings, limits: ContentLimits
) -> TurnDetection | None:
    """A client's ``turn_detection`` over the session's current one (or the edge's defaults)."""
    if td is None:
        return None
    base = current or TurnDetection(
        threshold=defaults.threshold,
        prefix_padding_ms=defaults.prefix_padding_ms,
        silence_duration_ms=defaults.silence_duration_ms,
        voicemesh_backchannel=defaults.backchannel.enabled,
    )
    vad = td if isinstance(td, ServerVad) else None
    if vad is not None:
        check_turn_detection(vad.model_dump(), limits)
    eagerness = None
    if vad is None:  # semantic_vad: the same VAD cuts the speech, the turn model ends the turn
        eagerness = td.eagerness or "auto"
        if eagerness not in EAGERNESS_MS:  # (the SDK's model refuses it first; a newer SDK may add some)
            param = "session.audio.input.turn_detection.eagerness"
            raise InvalidParam(f"{param}: {eagerness!r}: use one of {', '.join(EAGERNESS_MS)}", param=param)
    return TurnDetection(
        threshold=_given(vad.threshold if vad else None, base.threshold),
        prefix_padding_ms=_given(vad.prefix_padding_ms if vad else None, base.prefix_padding_ms),
        silence_duration_ms=_given(vad.silence_duration_ms if vad else None, base.silence_duration_ms),
        create_response=_given(td.create_response, base.create_response),
        interrupt_response=_given(td.interrupt_response, base.interrupt_response),
        voicemesh_backchannel=_given(backchannel_flag(td), base.voicemesh_backchannel),
        eagerness=eagerness,
    )
