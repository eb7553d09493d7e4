"""``POST /v1/audio/transcriptions``: an uploaded file (multipart, OpenAI's fields) -> text, as
``json``, ``text`` or ``verbose_json``. The file is decoded and bounded here; a region's STT
transcribes it, through the router like any turn (``TurnStart.transcribe_only``), booked like one.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from litestar import Request
from litestar.datastructures import UploadFile
from litestar.response import Response

from edge.shared.errors import InvalidParam
from edge.shared.limits import check_range, check_text
from edge.shared.tracing import traced_turn
from edge.speech.audio_encoding import decode_upload
from edge.speech.speech_deps import SpeechDeps
from edge.speech.speech_request import routing_of
from edge.tenancy.audit import TurnTrail
from edge.tenancy.auth import Principal
from edge.turns.transcribe_turn import book_transcription, run_transcription
from wire.audio import STT_RATE, float_to_pcm16
from wire.errors import NoRegionAvailable, VoicemeshError
from wire.turn import TurnStart

MAX_UPLOAD_BYTES = 25 * 1024 * 1024
"""An uploaded file: OpenAI's limit."""
MAX_TRANSCRIPTION_S = 30.0
"""Audio seconds of one transcription: a region's ``max_audio_s`` (``LimitSettings.max_buffer_s``)."""
TRANSCRIPTION_FORMATS = ("json", "text", "verbose_json")
_LANGUAGE = re.compile(r"^[a-z]{2,3}$")


async def transcribe(
    request: Request[Any, Any, Any], deps: SpeechDeps, principal: Principal
) -> Response[Any]:
    """The transcription of the request's file (``InvalidParam`` naming a bad field)."""
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
    check_text(prompt, "prompt", deps.settings.limits.content.max_instructions_chars)
    temperature = form.get("temperature")
    if temperature is not None:
        try:
            check_range(float(str(temperature)), "temperature", 0.0, 1.0)  # accepted; greedy decoding
        except ValueError as exc:
            raise InvalidParam("temperature must be a number", param="temperature") from exc
    max_s = min(MAX_TRANSCRIPTION_S, deps.settings.limits.max_buffer_s)
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
    _, events = traced_turn("transcription", start, lambda: deps.router.run_turn(routing, start, pcm))
    result = await run_transcription(events, trail)
    residency = None if routing.residency is None else sorted(routing.residency)
    await book_transcription(
        deps.accounting, trail, key_id=principal.key_id, session_id=routing.session_id,
        turn_id=start.turn_id, residency=residency, audio_in_bytes=start.audio_bytes,
        status="completed" if result.transcript is not None else "failed",
    )  # fmt: skip
    if result.refused is not None:
        raise result.refused.error()
    if result.transcript is None:
        reason = result.degraded.reason if result.degraded is not None else "no transcript"
        raise NoRegionAvailable(f"no region could transcribe this audio ({reason}); retry shortly")
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


__all__ = ["MAX_UPLOAD_BYTES", "transcribe"]
