"""One spoken turn through an edge with the stock Realtime client: what ``voicemesh talk`` does.

The audio goes out at real time followed by silence (so the edge's server VAD sees the end of
speech, as with a real microphone), and the reply is collected until ``response.done``.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import numpy as np

from voicemesh.realtime import Reply, collect_reply, connect, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio


async def talk(
    url: str, api_key: str, samples24: FloatAudio, *, model: str = "voicemesh", tail_silence_s: float = 1.0,
    pace: float = 1.0, session: dict[str, Any] | None = None, timeout_s: float = 120.0,
) -> Reply:  # fmt: skip
    """One spoken turn through server VAD: send the audio (then silence), wait for the reply."""
    reply = Reply()
    async with connect(url, api_key, model=model) as conn:
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
