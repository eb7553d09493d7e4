"""A session's settings: the edge's defaults for a new one, ``session.update`` -> ``SessionState``,
and ``SessionState`` -> the ``session`` object clients see.

Fields are applied in the order the client's event lists them here; the first bad one raises
(``BadEvent`` / ``BadAudio``) and the caller answers with an ``error`` event.
"""

from __future__ import annotations

import time
from typing import Any, TypeVar

import msgspec
from openai.types.realtime.realtime_audio_input_turn_detection import ServerVad
from openai.types.realtime.session_update_event import Session

from edge.events import new_id
from edge.settings import EdgeSettings, VadSettings
from edge.state import SessionState, TurnDetection
from wire.errors import BadAudio, BadEvent

T = TypeVar("T")


def _given(value: T | None, default: T) -> T:
    return default if value is None else value


def initial_state(settings: EdgeSettings, *, key_id: str, model: str = "") -> SessionState:
    """A new session as the edge's settings configure it (server VAD on)."""
    vad = settings.vad
    return SessionState(
        id=new_id("sess"),
        key_id=key_id,
        model=model,
        voice=settings.default_voice,
        instructions=settings.default_instructions,
        turn_detection=TurnDetection(
            threshold=vad.threshold,
            prefix_padding_ms=vad.prefix_padding_ms,
            silence_duration_ms=vad.silence_duration_ms,
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
        "audio": {
            "input": {
                "format": {"type": "audio/pcm", "rate": 24000},
                "turn_detection": None
                if td is None
                else {"type": "server_vad", **msgspec.structs.asdict(td)},
            },
            "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": state.voice or None},
        },
    }


def apply_session_update(state: SessionState, s: Session, vad_defaults: VadSettings) -> None:
    """Apply one ``session.update``'s ``session`` to ``state``."""
    if s.type != "realtime":
        raise BadEvent("only `realtime` sessions are served here", code="unsupported_session_type")
    if s.instructions is not None:
        state.instructions = s.instructions
    if s.output_modalities is not None:
        state.output_modalities = list(s.output_modalities)
    if isinstance(s.max_output_tokens, int):
        state.max_output_tokens = s.max_output_tokens
    audio = s.audio
    if audio is not None and audio.output is not None:
        if audio.output.format is not None and audio.output.format.type not in (None, "audio/pcm"):
            raise BadAudio(
                "only audio/pcm (24 kHz PCM16) output is supported", code="unsupported_audio_format"
            )
        if audio.output.voice is not None:
            voice = audio.output.voice
            state.voice = voice if isinstance(voice, str) else voice.id
    if audio is not None and audio.input is not None:
        if audio.input.format is not None and audio.input.format.type not in (None, "audio/pcm"):
            raise BadAudio(
                "only audio/pcm (24 kHz PCM16) input is supported", code="unsupported_audio_format"
            )
        if "turn_detection" in audio.input.model_fields_set:
            state.turn_detection = turn_detection(
                audio.input.turn_detection, state.turn_detection, vad_defaults
            )


def turn_detection(td: Any, current: TurnDetection | None, defaults: VadSettings) -> TurnDetection | None:
    """A client's ``turn_detection`` over the session's current one (or the edge's defaults)."""
    if td is None:
        return None
    base = current or TurnDetection(
        threshold=defaults.threshold,
        prefix_padding_ms=defaults.prefix_padding_ms,
        silence_duration_ms=defaults.silence_duration_ms,
    )
    vad = td if isinstance(td, ServerVad) else None  # semantic_vad: served by the same Silero VAD
    new = TurnDetection(
        threshold=_given(vad.threshold if vad else None, base.threshold),
        prefix_padding_ms=_given(vad.prefix_padding_ms if vad else None, base.prefix_padding_ms),
        silence_duration_ms=_given(vad.silence_duration_ms if vad else None, base.silence_duration_ms),
        create_response=_given(td.create_response, base.create_response),
        interrupt_response=_given(td.interrupt_response, base.interrupt_response),
    )
    if not 0.0 < new.threshold < 1.0 or new.prefix_padding_ms < 0 or new.silence_duration_ms < 32:
        raise BadEvent(
            "turn_detection: need 0 < threshold < 1, prefix_padding_ms >= 0, silence_duration_ms >= 32",
            code="invalid_value",
        )
    return new
