"""The OpenAI audio API at the edge (``docs/speech.md``), with the Realtime API's auth and limits:

* ``POST /v1/audio/speech``  text -> speech, streamed as it is synthesised (``edge/turns/speech_stream.py``)
* ``POST /v1/audio/transcriptions``  an uploaded file -> text (``json``, ``text``, ``verbose_json``)
* ``GET /v1/models``  the models this deployment serves, in OpenAI's list shape

Each request takes a token from its key's rate bucket (the one new Realtime sessions use, shared by
every edge) and is routed in the key's residency with its priority class. Bad input is refused
before any region is involved, with OpenAI's error JSON (``error.param`` names the field).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Request, get, post
from litestar.connection import ASGIConnection
from litestar.datastructures import UploadFile
from litestar.handlers import HTTPRouteHandler
from litestar.response import Response, Stream
from prometheus_client import Counter

from edge.app.services import EdgeServices
from edge.shared.events import new_id
from edge.shared.json_body import typed_body
from edge.shared.limits import InvalidParam, check_range, check_text, estimate_tokens
from edge.speech.audio_encoding import SPEECH_FORMATS, decode_upload, speech_encoder
from edge.speech.speech_cache import CachedSpeech, SpeechKey
from edge.tenancy.audit import EDGE, NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import check_voice_allowed, narrow
from edge.tenancy.usage import UsageDelta
from edge.turns.speech_stream import Book, SpeechStream
from edge.turns.transcribe_turn import book_transcription, run_transcription
from router.api import SessionRouting
from wire.audio import REGION_OUT_RATE, STT_RATE, float_to_pcm16
from wire.errors import NoRegionAvailable, VoicemeshError
from wire.turn import TurnStart
from wire.voices import CustomVoice, voice_digest

Authenticate = Callable[[ASGIConnection[Any, Any, Any, Any], list[str]], Awaitable[Principal]]

MAX_UPLOAD_BYTES = 25 * 1024 * 1024
"""An uploaded file: OpenAI's limit."""
MAX_TRANSCRIPTION_S = 30.0
"""Audio seconds of one transcription: a region's ``max_audio_s`` (``LimitSettings.max_buffer_s``)."""
TRANSCRIPTION_FORMATS = ("json", "text", "verbose_json")
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")

REQUESTS = Counter(
    "voicemesh_edge_audio_api_requests_total",
    "OpenAI audio API requests, by endpoint and outcome (`ok`, `edge_voice`, or the error code)",
    ["endpoint", "outcome"],
)
SPEECH_SECONDS = Counter(
    "voicemesh_edge_speech_audio_seconds_total",
    "Audio seconds streamed by /v1/audio/speech, by who spoke them (a region id or `edge`)",
    ["served_by"],
)


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


def _parse_speech(raw: bytes, services: EdgeServices, principal: Principal) -> SpeechRequest:
    return check_speech(typed_body(raw, SpeechParams), services, principal)


def check_speech(p: SpeechParams, services: EdgeServices, principal: Principal) -> SpeechRequest:
    """A speech request's fields, checked (``InvalidParam`` names the one at fault); a custom voice
    is left for the voice library to resolve."""
    if not p.model:
        raise InvalidParam("model is required", param="model")
    if not p.input.strip():
        raise InvalidParam("input is empty: nothing to say", param="input")
    # OpenAI allows 4,096 characters; a region reads at most its ``max_text_chars`` (4,000), which
    # the edge's bound mirrors: past it every region would refuse the turn.
    check_text(p.input, "input", services.settings.limits.content.max_text_chars)
    check_text(p.instructions, "instructions", services.settings.limits.content.max_instructions_chars)
    region_voice = ""
    custom: str | dict[str, Any] | None = None
    if isinstance(p.voice, dict):
        voice_id = p.voice.get("id")
        if not isinstance(voice_id, str) or not voice_id or set(p.voice) != {"id"}:
            raise InvalidParam('a custom voice is named as {"id": "voice_..."}', param="voice")
        check_text(voice_id, "voice", services.settings.limits.content.max_voice_chars)
        custom = p.voice
    else:
        check_text(p.voice, "voice", services.settings.limits.content.max_voice_chars)
        if p.voice and p.voice not in services.settings.voices.names():
            custom = p.voice  # a custom voice's name, or nothing at all: the library says which
        else:
            region_voice = services.settings.voices.region_voice(p.voice, param="voice")
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


def _sse(event: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(event)}\n\n".encode()


def _delta(audio: bytes) -> bytes:
    return _sse({"type": "speech.audio.delta", "audio": base64.b64encode(audio).decode()})


def _done(p: SpeechParams, voicemesh: dict[str, Any]) -> dict[str, Any]:
    tokens = estimate_tokens(p.input)
    return {
        "type": "speech.audio.done",
        "usage": {"input_tokens": tokens, "output_tokens": 0, "total_tokens": tokens},
        "voicemesh": voicemesh,
    }


CACHED_CHUNK = 32_768
"""A cache hit is streamed in pieces of this size (an SSE delta each)."""


def book_cache_hit(services: EdgeServices, key_id: str, routing: SessionRouting, turn_id: str,
                         cached: CachedSpeech) -> Awaitable[None]:  # fmt: skip
    """Books a speech cache hit: its audio out, no region (``cache_hit``)."""
    record = AuditRecord(
        at=now(), key_id=key_id, session_id=routing.session_id, turn_id=turn_id, kind="speech",
        residency=None if routing.residency is None else sorted(routing.residency), cache_hit=True,
    )  # fmt: skip
    return services.accounting.book(record, UsageDelta.of(audio_in_bytes=0, audio_out_bytes=cached.pcm_bytes))


def _cached_speech(p: SpeechParams, cached: CachedSpeech, turn_id: str, book: Awaitable[None]) -> Stream:
    """A speech cache hit: the stored audio, no router turn, no synthesis; booked once sent."""
    sse = p.stream_format == "sse"
    headers = {"x-voicemesh-request-id": turn_id, "x-voicemesh-cache": "hit"}
    if cached.regions:
        headers["x-voicemesh-region"] = cached.regions[0]

    async def body() -> AsyncIterator[bytes]:
        for i in range(0, len(cached.audio), CACHED_CHUNK):
            data = cached.audio[i : i + CACHED_CHUNK]
            yield _delta(data) if sse else data
        REQUESTS.labels("speech", "ok").inc()
        await book
        if sse:
            yield _sse(_done(p, {"regions": cached.regions, "fallback": None, "cache": "hit"}))

    media_type = "text/event-stream" if sse else SPEECH_FORMATS[p.response_format].media_type
    return Stream(body(), media_type=media_type, headers=headers)


def speech_key(
    p: SpeechParams, region_voice: str, custom: CustomVoice | None, routing: SessionRouting
) -> SpeechKey:
    """What the speech cache files a request's audio under."""
    return SpeechKey(
        text=p.input, voice=f"custom:{voice_digest(custom)}" if custom else region_voice,
        response_format=p.response_format, speed=p.speed, residency=routing.residency,
    )  # fmt: skip


def speech_booking(services: EdgeServices, key_id: str, routing: SessionRouting, turn_id: str) -> Book:
    """Books a speech request like a turn (``kind`` ``speech``; its id stands for the session)."""

    async def book(trail: TurnTrail, status: str) -> None:
        if trail.degraded is not None:
            trail.left_for(NOWHERE if status == "failed" else EDGE)
        outcome, reason = trail.outcome(status, "client_went_away")
        record = AuditRecord(
            at=now(), key_id=key_id, session_id=routing.session_id, turn_id=turn_id, kind="speech",
            residency=None if routing.residency is None else sorted(routing.residency),
            regions=trail.regions, failovers=trail.hops, outcome=outcome, reason=reason,
        )  # fmt: skip
        delta = UsageDelta.of(audio_in_bytes=0, audio_out_bytes=trail.audio_out_bytes)
        await services.accounting.book(record, delta)

    return book


def audio_route_handlers(authenticate: Authenticate) -> list[HTTPRouteHandler]:
    async def admitted(request: Request[Any, Any, Any]) -> tuple[EdgeServices, Principal]:
        services: EdgeServices = request.app.state.services
        principal = await authenticate(request, [])
        await services.limits.check_rate(principal.key_id, principal.policy)
        return services, principal

    @post("/v1/audio/speech", status_code=200)
    async def speech(request: Request[Any, Any, Any]) -> Stream:
        try:
            services, principal = await admitted(request)
            req = _parse_speech(await request.body(), services, principal)
            p = req.params
            custom = None
            if req.custom is not None:
                custom = await services.voice_library.resolve(req.custom, principal, param="voice")
            routing, turn_id = routing_of(principal, "speech")
            key = speech_key(p, req.region_voice, custom, routing)
            if (cached := await services.speech_cache.get(key)) is not None:
                book = book_cache_hit(services, principal.key_id, routing, turn_id, cached)
                return _cached_speech(p, cached, turn_id, book)
            start = TurnStart(
                turn_id=turn_id, speak_text=p.input, voice=req.region_voice, speed=p.speed,
                priority=principal.policy.priority, custom_voice=custom,
            )  # fmt: skip
            stream = SpeechStream(
                services.router, services.fallback, routing, start,
                speak_on_no_region=principal.policy.on_no_region != "error",
                book=speech_booking(services, principal.key_id, routing, turn_id),
            )  # fmt: skip
            await stream.open()
        except VoicemeshError as exc:
            REQUESTS.labels("speech", exc.code).inc()
            raise
        out = stream.outcome
        headers = {"x-voicemesh-request-id": turn_id, "x-voicemesh-cache": "miss"}
        if out.fallback is not None:  # no region was left before the first audio
            headers["x-voicemesh-fallback"] = out.fallback
        elif out.regions:
            headers["x-voicemesh-region"] = out.regions[-1]
        sse = p.stream_format == "sse"
        encoder = speech_encoder(p.response_format)

        async def body() -> AsyncIterator[bytes]:
            seconds: dict[str, float] = {}
            kept: list[bytes] | None = []  # for the speech cache, until past its size cap
            room = services.speech_cache.settings.max_entry_bytes

            def keep(data: bytes) -> bytes:
                nonlocal kept, room
                if kept is not None:
                    kept.append(data)
                    room -= len(data)
                    if room < 0:
                        kept = None  # too big to store: streamed, not cached
                return _delta(data) if sse else data

            async for piece in stream.pcm():
                seconds[piece.by] = seconds.get(piece.by, 0.0) + len(piece.pcm) / 2 / REGION_OUT_RATE
                if data := encoder.encode(piece.pcm):
                    yield keep(data)
            if tail := encoder.finish():
                yield keep(tail)
            for by, s in seconds.items():
                SPEECH_SECONDS.labels(by).inc(s)
            REQUESTS.labels("speech", "edge_voice" if out.fallback else "ok").inc()
            # Only what regions spoke whole: never the fallback voice's, never a cut answer.
            if kept is not None and out.complete and out.fallback is None and out.regions:
                regions = list(dict.fromkeys(out.regions))
                await services.speech_cache.put(key, b"".join(kept), regions, pcm_bytes=out.audio_bytes)
            if sse:
                yield _sse(_done(p, {"regions": out.regions, "fallback": out.fallback}))

        media_type = "text/event-stream" if sse else SPEECH_FORMATS[p.response_format].media_type
        return Stream(body(), media_type=media_type, headers=headers)

    @post("/v1/audio/transcriptions", status_code=200, request_max_body_size=MAX_UPLOAD_BYTES + 65_536)
    async def transcriptions(request: Request[Any, Any, Any]) -> Response[Any]:
        try:
            return await _transcribe(request)
        except VoicemeshError as exc:
            REQUESTS.labels("transcriptions", exc.code).inc()
            raise

    async def _transcribe(request: Request[Any, Any, Any]) -> Response[Any]:
        services, principal = await admitted(request)
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise InvalidParam("file is required: send the audio as a multipart file", param="file")
        data = await upload.read()
        if len(data) > MAX_UPLOAD_BYTES:
            raise InvalidParam(f"the file is over {MAX_UPLOAD_BYTES} bytes", param="file")
        if not str(form.get("model") or ""):
            raise InvalidParam("model is required", param="model")
        fmt = str(form.get("response_format") or "json")
        if fmt not in TRANSCRIPTION_FORMATS:
            raise InvalidParam(
                f"response_format '{fmt}' is not supported: use one of {', '.join(TRANSCRIPTION_FORMATS)}",
                param="response_format",
            )
        language = str(form.get("language") or "")
        if language and not _LANGUAGE.match(language):
            raise InvalidParam("language must be an ISO-639-1 code such as 'en'", param="language")
        prompt = str(form.get("prompt") or "")
        check_text(prompt, "prompt", services.settings.limits.content.max_instructions_chars)
        temperature = form.get("temperature")
        if temperature is not None:
            try:
                check_range(float(str(temperature)), "temperature", 0.0, 1.0)  # accepted; greedy decoding
            except ValueError as exc:
                raise InvalidParam("temperature must be a number", param="temperature") from exc
        max_s = min(MAX_TRANSCRIPTION_S, services.settings.limits.max_buffer_s)
        try:
            audio = await asyncio.to_thread(decode_upload, data, max_seconds=max_s)
        except VoicemeshError as exc:
            raise InvalidParam(exc.message, param="file", code=exc.code) from exc
        pcm = float_to_pcm16(audio)
        routing, turn_id = routing_of(principal, "transcription")
        start = TurnStart(
            turn_id=turn_id, transcribe_only=True, output_audio=False, audio_bytes=len(pcm),
            language=language, prompt=prompt, priority=principal.policy.priority,
        )  # fmt: skip
        t0 = time.perf_counter()
        trail = TurnTrail()
        result = await run_transcription(services.router.run_turn(routing, start, pcm), trail)
        residency = None if routing.residency is None else sorted(routing.residency)
        await book_transcription(
            services.accounting, trail, key_id=principal.key_id, session_id=routing.session_id,
            turn_id=start.turn_id, residency=residency, audio_in_bytes=start.audio_bytes,
            status="completed" if result.transcript is not None else "failed",
        )  # fmt: skip
        if result.refused is not None:
            raise result.refused.error()
        if result.transcript is None:
            reason = result.degraded.reason if result.degraded is not None else "no transcript"
            raise NoRegionAvailable(f"no region could transcribe this audio ({reason}); retry shortly")
        REQUESTS.labels("transcriptions", "ok").inc()
        seconds = round(len(audio) / STT_RATE, 3)
        text = result.transcript.text
        headers = {"x-voicemesh-region": result.region, "x-voicemesh-request-id": turn_id}
        if fmt == "text":
            return Response(text + "\n", media_type="text/plain", headers=headers)
        usage = {"type": "duration", "seconds": seconds}
        if fmt == "json":
            return Response({"text": text, "usage": usage}, headers=headers)
        segments = [
            {
                "id": i, "seek": 0, "start": s.start, "end": s.end, "text": s.text, "tokens": [],
                "temperature": 0.0, "avg_logprob": s.avg_logprob, "compression_ratio": 1.0,
                "no_speech_prob": s.no_speech_prob,
            }
            for i, s in enumerate(result.transcript.segments)
        ]  # fmt: skip
        body = {
            "task": "transcribe", "language": language or "en", "duration": seconds, "text": text,
            "segments": segments, "usage": usage,
            "voicemesh": {"region": result.region, "seconds_taken": round(time.perf_counter() - t0, 3)},
        }  # fmt: skip
        return Response(body, headers=headers)

    @get("/v1/models")
    async def models(request: Request[Any, Any, Any]) -> dict[str, Any]:
        services: EdgeServices = request.app.state.services
        await authenticate(request, [])
        served = {"realtime": "voicemesh", **services.settings.models}
        data = [
            {
                "id": name,
                "object": "model",
                "created": 0,
                "owned_by": "voicemesh",
                "voicemesh": {"kind": kind},
            }
            for kind, name in served.items()
        ]
        return {"object": "list", "data": data}

    return [speech, transcriptions, models]


__all__ = [
    "MAX_UPLOAD_BYTES",
    "SpeechParams",
    "SpeechRequest",
    "audio_route_handlers",
    "book_cache_hit",
    "check_speech",
    "routing_of",
    "speech_booking",
    "speech_key",
]  # fmt: skip
