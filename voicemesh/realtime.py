"""The one OpenAI Realtime client: the stock ``openai`` SDK's ``client.realtime.connect``, and the
event and audio helpers every tool that talks to an edge shares.

``voicemesh talk``, the drills' callers, the edge bench's relay test and the edge tests all connect
through ``connect`` and send audio with ``send_audio``, so they drive the edge exactly as any
Realtime client would. The edge bench's capacity load generator (``voicemesh.bench.edge``) speaks
the same events over raw websockets, because the SDK's per-event cost would otherwise be measured
along with the edge's: it builds them with ``append_event``, ``session_config`` and ``pcm_chunks``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openai import AsyncOpenAI, WebSocketQueueFullError
from openai.resources.realtime.realtime import AsyncRealtimeConnection, AsyncRealtimeConnectionManager
from openai.types.websocket_reconnection import ReconnectingEvent, ReconnectingOverrides
from websockets.exceptions import ConnectionClosed

from wire.audio import CLIENT_RATE, FloatAudio, float_to_pcm16

CHUNK_MS = 40
"""Audio per ``input_audio_buffer.append``, as real clients send it."""

# How the edge marks a response (edge/responses/response.py): ``response.metadata`` keys, and vendor events.
META_REGION = "voicemesh_region"
META_FAILED_OVER_FROM = "voicemesh_failed_over_from"
META_DEGRADED = "voicemesh_degraded"
META_DEGRADED_REASON = "voicemesh_degraded_reason"
VENDOR_PREFIX = "voicemesh."


def client(url: str, api_key: str) -> AsyncOpenAI:
    """The stock SDK client for an edge; ``url`` is its ``ws://host:port/v1``."""
    return AsyncOpenAI(
        api_key=api_key, websocket_base_url=url, base_url=url.replace("ws", "http", 1), max_retries=0
    )


def connect(
    url: str, api_key: str, *, model: str = "voicemesh", max_retries: int | None = None,
    resume: Resuming | None = None,
) -> AsyncRealtimeConnectionManager:  # fmt: skip
    """``async with connect(...) as conn``: one Realtime session on the edge at ``url``.

    ``max_retries=0`` turns off the SDK's reconnects (a tool that must see a dropped session as one);
    ``None`` keeps the SDK's default. ``resume``: the SDK's reconnects resume the session (on any
    edge behind ``url``: ``docs/resume.md``); with ``resume.session_id`` set, the first connection
    resumes it too.
    """
    rt = client(url, api_key).realtime
    options: dict[str, Any] = {} if max_retries is None else {"max_retries": max_retries}
    if resume is not None:
        options["on_reconnecting"] = resume
        if resume.session_id:
            options["extra_query"] = {"session_id": resume.session_id}
    return rt.connect(model=model, **options)


@dataclass
class Resuming:
    """The SDK's ``on_reconnecting`` hook that resumes the session (``docs/resume.md``): call
    ``seen(event)`` on ``session.created`` (or set ``session_id``); ``reconnects`` counts its uses."""

    session_id: str = ""
    reconnects: int = 0

    def seen(self, event: Any) -> None:
        if getattr(event, "type", "") == "session.created":
            self.session_id = str((event.session.model_extra or {}).get("id", "")) or self.session_id

    def __call__(self, event: ReconnectingEvent) -> ReconnectingOverrides | None:
        if not self.session_id:
            return None  # nothing to resume yet: a plain reconnect
        self.reconnects += 1
        return {"extra_query": {**event.extra_query, "session_id": self.session_id}}


def resuming(session_id: str = "") -> Resuming:
    return Resuming(session_id)


def session_config(
    *,
    instructions: str | None = None,
    max_output_tokens: int | None = None,
    silence_ms: int | None = None,
    create_response: bool | None = None,
) -> dict[str, Any]:
    """The ``session`` of a ``session.update``; the server VAD part only when one of its fields is given."""
    session: dict[str, Any] = {"type": "realtime"}
    if instructions is not None:
        session["instructions"] = instructions
    if max_output_tokens is not None:
        session["max_output_tokens"] = max_output_tokens
    vad: dict[str, Any] = {}
    if silence_ms is not None:
        vad["silence_duration_ms"] = silence_ms
    if create_response is not None:
        vad["create_response"] = create_response
    if vad:
        session["audio"] = {"input": {"turn_detection": {"type": "server_vad", **vad}}}
    return session


def chunk_bytes(chunk_ms: int = CHUNK_MS) -> int:
    """PCM16 bytes in ``chunk_ms`` of client-rate audio."""
    return CLIENT_RATE * chunk_ms // 1000 * 2


def pcm_chunks(pcm: bytes, chunk_ms: int = CHUNK_MS) -> list[bytes]:
    """PCM16 audio cut into ``chunk_ms`` appends (the last one may be shorter)."""
    step = chunk_bytes(chunk_ms)
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


def append_event(pcm: bytes) -> str:
    """An ``input_audio_buffer.append`` of PCM16 ``pcm``, serialised: the JSON the SDK's typed
    ``conn.input_audio_buffer.append`` sends, without a pydantic round trip per 40 ms chunk."""
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()})


def delta_seconds(delta_b64: str) -> float:
    """Seconds of audio in a ``response.output_audio.delta``."""
    return len(base64.b64decode(delta_b64)) / 2 / CLIENT_RATE


async def send_audio(conn: AsyncRealtimeConnection, pcm: bytes, *, resuming: bool = False) -> None:
    """Append PCM16 ``pcm`` to the session's input buffer.

    ``resuming`` (a connection made with ``resume``): a chunk sent in the moment between the edge's
    close (a drain's 1012) and the SDK's reader noticing it is dropped, not raised. The SDK reconnects
    from its reading side only, and queues what is sent once it has begun; a microphone that never
    stops sending would otherwise end the session on a close the reader was about to resume from.
    A reconnect that takes long (~16 s of audio: the SDK's 1 MB queue) has the SDK discard what no
    longer fits: dropped too, as a live microphone's audio is while the line is down.
    """
    try:
        await conn.send_raw(append_event(pcm))
    except (ConnectionClosed, WebSocketQueueFullError):
        if not resuming:
            raise


async def tick(start: float, i: int, interval_s: float) -> None:
    """Sleep until ``start + i * interval_s`` (monotonic): paced sends that never drift."""
    await asyncio.sleep(max(0.0, start + i * interval_s - time.monotonic()))


@dataclass
class Reply:
    """What one turn produced, as the client saw it."""

    events: list[Any] = field(default_factory=list)
    transcript: str = ""
    text: str = ""
    audio: bytearray = field(default_factory=bytearray)
    metadata: dict[str, str] = field(default_factory=dict)
    status: str = ""
    first_audio_s: float | None = None
    """From ``speech_stopped`` (or ``started_at`` given to ``collect_reply``) to the first audio delta."""

    @property
    def types(self) -> list[str]:
        return event_types(self.events)

    @property
    def region(self) -> str:
        if self.metadata.get(META_DEGRADED) == "true":
            return "edge (degraded: Piper)"
        return self.metadata.get(META_REGION, "?")


async def stream_audio(
    conn: AsyncRealtimeConnection, samples24: FloatAudio, *, pace: float = 1.0, chunk_ms: int = CHUNK_MS
) -> None:
    """Send 24 kHz audio in ``chunk_ms`` appends at ``pace`` x real time (0 = as fast as possible)."""
    t0 = time.monotonic()
    for i, chunk in enumerate(pcm_chunks(float_to_pcm16(samples24), chunk_ms)):
        await send_audio(conn, chunk)
        if pace > 0:
            await tick(t0, i + 1, chunk_ms / 1000 / pace)


async def collect_reply(
    conn: AsyncRealtimeConnection, reply: Reply, *, timeout_s: float = 120.0, started_at: float | None = None
) -> Reply:
    """Read events until ``response.done`` (or ``timeout_s``).

    Time to first audio counts from ``started_at`` (``time.monotonic()``, e.g. when a text turn's
    ``response.create`` went out), else from the server VAD's ``speech_stopped``.
    """
    stopped_at = started_at
    async with asyncio.timeout(timeout_s):
        async for event in conn:
            reply.events.append(event)
            if event.type == "input_audio_buffer.speech_stopped" and started_at is None:
                stopped_at = time.monotonic()
            elif event.type == "conversation.item.input_audio_transcription.completed":
                reply.transcript = event.transcript
            elif event.type in ("response.output_audio_transcript.delta", "response.output_text.delta"):
                reply.text += event.delta  # a text-only reply comes as output_text
            elif event.type == "response.output_audio.delta":
                if reply.first_audio_s is None and stopped_at is not None:
                    reply.first_audio_s = time.monotonic() - stopped_at
                reply.audio += base64.b64decode(event.delta)
            elif event.type == "response.done":
                reply.status = event.response.status or ""
                reply.metadata = dict(event.response.metadata or {})
                break
    return reply


def event_types(events: Sequence[Any]) -> list[str]:
    return [e.type for e in events]
