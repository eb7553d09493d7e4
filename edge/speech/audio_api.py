"""The OpenAI audio API at the edge (``docs/speech.md``), with the Realtime API's auth and limits:

* ``POST /v1/audio/speech``  text -> speech, streamed as it is synthesised (``edge/turns/speech_stream.py``)
* ``POST /v1/audio/transcriptions``  an uploaded file -> text (``json``, ``text``, ``verbose_json``)
* ``GET /v1/models``  the models this deployment serves, in OpenAI's list shape

Each request takes a token from its key's rate bucket (the one new Realtime sessions use, shared by
every edge) and is routed in the key's residency with its priority class. Bad input is refused
before any region is involved, with OpenAI's error JSON (``error.param`` names the field).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from litestar import Request, get, post
from litestar.connection import ASGIConnection
from litestar.handlers import HTTPRouteHandler
from litestar.params import SkipValidation
from litestar.response import Response, Stream
from prometheus_client import Counter

from edge.shared.limits import estimate_tokens
from edge.speech.audio_encoding import SPEECH_FORMATS, speech_encoder
from edge.speech.speech_booking import book_cache_hit, speech_booking
from edge.speech.speech_cache import CachedSpeech
from edge.speech.speech_deps import SpeechDeps
from edge.speech.speech_request import SpeechParams, parse_speech, routing_of, speech_key
from edge.speech.transcription_route import MAX_UPLOAD_BYTES, transcribe
from edge.tenancy.auth import Principal
from edge.turns.speech_stream import SpeechStream
from wire.audio import REGION_OUT_RATE
from wire.errors import VoicemeshError
from wire.turn import TurnStart

Authenticate = Callable[[ASGIConnection[Any, Any, Any, Any], list[str]], Awaitable[Principal]]

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


def audio_route_handlers(authenticate: Authenticate) -> list[HTTPRouteHandler]:
    async def admitted(request: Request[Any, Any, Any], deps: SpeechDeps) -> Principal:
        principal = await authenticate(request, [])
        await deps.limits.check_rate(principal.key_id, principal.policy)
        return principal

    @post("/v1/audio/speech", status_code=200)
    async def speech(request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]) -> Stream:
        deps = speech_deps
        try:
            principal = await admitted(request, deps)
            req = parse_speech(await request.body(), deps.settings, principal)
            p = req.params
            custom = None
            if req.custom is not None:
                custom = await deps.voices.resolve(req.custom, principal, param="voice")
            routing, turn_id = routing_of(principal, "speech")
            key = speech_key(p, req.region_voice, custom, routing)
            if (cached := await deps.cache.get(key)) is not None:
                book = book_cache_hit(deps.accounting, principal.key_id, routing, turn_id, cached)
                return _cached_speech(p, cached, turn_id, book)
            start = TurnStart(
                turn_id=turn_id, speak_text=p.input, voice=req.region_voice, speed=p.speed,
                priority=principal.policy.priority, custom_voice=custom,
            )  # fmt: skip
            stream = SpeechStream(
                deps.router, deps.fallback, routing, start,
                speak_on_no_region=principal.policy.on_no_region != "error",
                book=speech_booking(deps.accounting, principal.key_id, routing, turn_id),
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
            room = deps.cache.settings.max_entry_bytes

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
                await deps.cache.put(key, b"".join(kept), regions, pcm_bytes=out.audio_bytes)
            if sse:
                yield _sse(_done(p, {"regions": out.regions, "fallback": out.fallback}))

        media_type = "text/event-stream" if sse else SPEECH_FORMATS[p.response_format].media_type
        return Stream(body(), media_type=media_type, headers=headers)

    @post("/v1/audio/transcriptions", status_code=200, request_max_body_size=MAX_UPLOAD_BYTES + 65_536)
    async def transcriptions(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> Response[Any]:
        try:
            response = await transcribe(request, speech_deps, await admitted(request, speech_deps))
        except VoicemeshError as exc:
            REQUESTS.labels("transcriptions", exc.code).inc()
            raise
        REQUESTS.labels("transcriptions", "ok").inc()
        return response

    @get("/v1/models")
    async def models(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> dict[str, Any]:
        await authenticate(request, [])
        served = {"realtime": "voicemesh", **speech_deps.settings.models}
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


__all__ = ["Authenticate", "audio_route_handlers"]
