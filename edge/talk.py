"""A small Realtime client built on the stock ``openai`` SDK: speak audio to an edge, collect the reply.

Used by ``voicemesh talk``, the edge benchmarks and the tests, so all three drive the edge exactly as
any OpenAI Realtime client would.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection

from wire.audio import CLIENT_RATE, FloatAudio, float_to_pcm16

CHUNK_MS = 40


@dataclass
class Reply:
    """What one spoken turn produced, as the client saw it."""

    events: list[Any] = field(default_factory=list)
    transcript: str = ""
    text: str = ""
    audio: bytearray = field(default_factory=bytearray)
    metadata: dict[str, str] = field(default_factory=dict)
    status: str = ""
    first_audio_s: float | None = None
    """From ``speech_stopped`` (or the end of the input, without VAD) to the first audio delta."""

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def region(self) -> str:
        if self.metadata.get("voicemesh_degraded") == "true":
            return "edge (degraded: Piper)"
        return self.metadata.get("voicemesh_region", "?")


def client(url: str, api_key: str) -> AsyncOpenAI:
    """``url`` is the edge's ``ws://host:port/v1``."""
    return AsyncOpenAI(
        api_key=api_key, websocket_base_url=url, base_url=url.replace("ws", "http", 1), max_retries=0
    )


async def stream_audio(
    conn: AsyncRealtimeConnection, samples24: FloatAudio, *, pace: float = 1.0, chunk_ms: int = CHUNK_MS
) -> None:
    """Send 24 kHz audio in ``chunk_ms`` appends at ``pace`` x real time (0 = as fast as possible)."""
    step = CLIENT_RATE * chunk_ms // 1000
    t0 = time.monotonic()
    for i, off in enumerate(range(0, len(samples24), step)):
        chunk = float_to_pcm16(samples24[off : off + step])
        await conn.input_audio_buffer.append(audio=base64.b64encode(chunk).decode())
        if pace > 0:
            delay = t0 + (i + 1) * chunk_ms / 1000 / pace - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)


async def collect_reply(conn: AsyncRealtimeConnection, reply: Reply, *, timeout_s: float = 120.0) -> Reply:
    """Read events until ``response.done`` (or ``timeout_s``)."""
    stopped_at: float | None = None
    async with asyncio.timeout(timeout_s):
        async for event in conn:
            reply.events.append(event)
            if event.type == "input_audio_buffer.speech_stopped":
                stopped_at = time.monotonic()
            elif event.type == "conversation.item.input_audio_transcription.completed":
                reply.transcript = event.transcript
            elif event.type == "response.output_audio_transcript.delta":
                reply.text += event.delta
            elif event.type == "response.output_audio.delta":
                if reply.first_audio_s is None and stopped_at is not None:
                    reply.first_audio_s = time.monotonic() - stopped_at
                reply.audio += base64.b64decode(event.delta)
            elif event.type == "response.done":
                reply.status = event.response.status or ""
                reply.metadata = dict(event.response.metadata or {})
                break
    return reply


async def talk(
    url: str, api_key: str, samples24: FloatAudio, *, model: str = "voicemesh", tail_silence_s: float = 1.0,
    pace: float = 1.0, session: dict[str, Any] | None = None, timeout_s: float = 120.0,
) -> Reply:  # fmt: skip
    """One spoken turn through server VAD: send the audio (then silence), wait for the reply."""
    reply = Reply()
    async with client(url, api_key).realtime.connect(model=model) as conn:
        created = await conn.recv()
        reply.events.append(created)
        if session:
            await conn.session.update(session=session)  # type: ignore[arg-type]
        audio = np.concatenate([samples24, np.zeros(int(tail_silence_s * CLIENT_RATE), dtype=np.float32)])
        sender = asyncio.create_task(stream_audio(conn, audio, pace=pace))
        try:
            await collect_reply(conn, reply, timeout_s=timeout_s)
        finally:
            sender.cancel()
            with contextlib.suppress(BaseException):
                await sender
    return reply


def event_types(events: Sequence[Any]) -> list[str]:
    return [e.type for e in events]
