"""A ``POST /v1/audio/speech`` request (also a speech batch's item): its body, its fields checked
before any region is involved (``InvalidParam`` names the one at fault), how it is routed (the key's
residency), and what the speech cache files its audio under.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.json_body import typed_body
from edge.shared.limits import check_range, check_text
from edge.shared.settings import EdgeSettings
from edge.speech.audio_encoding import SPEECH_FORMATS
from edge.speech.speech_cache import SpeechKey
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import check_voice_allowed, narrow
from router.api import SessionRouting
from wire.voices import CustomVoice, voice_digest


class SpeechParams(msgspec.Struct, kw_only=True):
    """``POST /v1/audio/speech``'s body (``openai.types.audio.SpeechCreateParams``)."""

    model: str
    input: str
    voice: str | dict[str, Any]
    instructions: str = ""
    """Accepted and bounded, not acted on: Kokoro has no style prompt (``docs/speech.md``)."""
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: str = "audio"


@dataclass(frozen=True)
class SpeechRequest:
    params: SpeechParams
    region_voice: str
    custom: str | dict[str, Any] | None = None
    """A voice that is not built in: a custom voice's ``{"id": ...}`` or name, resolved by the
    voice library (``edge/speech/custom_voices.py``) once the body is checked."""


def parse_speech(raw: bytes, settings: EdgeSettings, principal: Principal) -> SpeechRequest:
    return check_speech(typed_body(raw, SpeechParams), settings, principal)


def check_speech(p: SpeechParams, settings: EdgeSettings, principal: Principal) -> SpeechRequest:
    """A speech request's fields, checked (``InvalidParam`` names the one at fault); a custom voice
    is left for the voice library to resolve."""
    if not p.model:
        raise InvalidParam("model is required", param="model")
    if not p.input.strip():
        raise InvalidParam("input is empty: nothing to say", param="input")
    # OpenAI allows 4,096 characters; a region reads at most its ``max_text_chars`` (4,000), which
    # the edge's bound mirrors: past it every region would refuse the turn.
    check_text(p.input, "input", settings.limits.content.max_text_chars)
    check_text(p.instructions, "instructions", settings.limits.content.max_instructions_chars)
    region_voice = ""
    custom: str | dict[str, Any] | None = None
    if isinstance(p.voice, dict):
        voice_id = p.voice.get("id")
        if not isinstance(voice_id, str) or not voice_id or set(p.voice) != {"id"}:
            raise InvalidParam('a custom voice is named as {"id": "voice_..."}', param="voice")
        check_text(voice_id, "voice", settings.limits.content.max_voice_chars)
        custom = p.voice
    else:
        check_text(p.voice, "voice", settings.limits.content.max_voice_chars)
        if p.voice and p.voice not in settings.voices.names():
            custom = p.voice  # a custom voice's name, or nothing at all: the library says which
        else:
            region_voice = settings.voices.region_voice(p.voice, param="voice")
            check_voice_allowed(p.voice, principal.policy.voices, "voice")
    if p.response_format not in SPEECH_FORMATS:
        raise InvalidParam(
            f"response_format '{p.response_format}' is not supported: use one of {', '.join(SPEECH_FORMATS)}",
            param="response_format",
        )
    check_range(p.speed, "speed", 0.25, 4.0)
    if p.stream_format not in ("audio", "sse"):
        raise InvalidParam("stream_format must be 'audio' or 'sse'", param="stream_format")
    return SpeechRequest(p, region_voice, custom)


def routing_of(principal: Principal, prefix: str) -> tuple[SessionRouting, str]:
    turn_id = new_id(prefix)
    residency = narrow(principal.policy.residency, principal.residency)
    return SessionRouting(session_id=turn_id, residency=residency), turn_id


def speech_key(
    p: SpeechParams, region_voice: str, custom: CustomVoice | None, routing: SessionRouting
) -> SpeechKey:
    """What the speech cache files a request's audio under."""
    return SpeechKey(
        text=p.input, voice=f"custom:{voice_digest(custom)}" if custom else region_voice,
        response_format=p.response_format, speed=p.speed, residency=routing.residency,
    )  # fmt: skip


__all__ = ["SpeechParams", "SpeechRequest", "check_speech", "parse_speech", "routing_of", "speech_key"]
