"""A resuming client's microphone outlives a long reconnect (``voicemesh.realtime.send_audio``).

The stock SDK queues what is sent while it reconnects, up to 1 MB (~16 s of audio), and discards
what no longer fits with ``WebSocketQueueFullError``: a drill caller that kept talking through a
slow resume ended there (the 20-minute chaos drill). The server is a stand-in (a websockets server
on loopback that closes with 1012, then holds the reconnect's handshake): the SDK's reconnect and
its queue are what is under test, not the edge.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from openai import WebSocketQueueFullError
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from voicemesh.realtime import Resuming, connect, send_audio

CHUNK = bytes(48_000)  # 1 s of 24 kHz PCM16: ~64 KB once base64'd into its event
SENT = 24  # ~1.5 MB: more than the SDK's queue holds
LAST = bytes(4_800)  # 0.1 s, sent once the session is back
CHUNK_B64, LAST_B64 = (len(base64.b64encode(b)) for b in (CHUNK, LAST))


class Restarting:
    """Closes the first connection with 1012 (a drain); holds later handshakes until ``go``."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.appended: list[int] = []
        """Each append's audio, in base64 characters."""
        self.go = asyncio.Event()

    async def hold(self, conn: ServerConnection, request: Request) -> Response | None:
        if self.paths:
            await self.go.wait()
        self.paths.append(request.path)
        return None

    async def handle(self, ws: ServerConnection) -> None:
        created = {
            "type": "session.created",
            "event_id": "e",
            "session": {"id": "sess_1", "type": "realtime"},
        }
        await ws.send(json.dumps(created))
        if len(self.paths) == 1:
            await ws.close(1012, "restarting")
            return
        async for message in ws:
            event = json.loads(message)
            if event["type"] == "input_audio_buffer.append":
                self.appended.append(len(event["audio"]))


@asynccontextmanager
async def restarting() -> AsyncIterator[tuple[Restarting, str]]:
    server = Restarting()
    async with serve(server.handle, "127.0.0.1", 0, process_request=server.hold) as ws_server:
        port = next(iter(ws_server.sockets)).getsockname()[1]
        yield server, f"ws://127.0.0.1:{port}/v1"


async def test_a_resuming_microphone_drops_what_the_sdk_cannot_queue_and_goes_on() -> None:
    async with restarting() as (server, url):
        resume = Resuming()
        async with connect(url, "key", max_retries=3, resume=resume) as conn:
            events: list[str] = []

            async def read() -> None:
                async for event in conn:
                    resume.seen(event)
                    events.append(event.type)

            reader = asyncio.create_task(read())
            try:
                async with asyncio.timeout(30):
                    while resume.reconnects == 0:  # noqa: ASYNC110 - the SDK's hook has no event to await
                        await asyncio.sleep(0.01)
                    with pytest.raises(WebSocketQueueFullError):  # what ended the drill's caller
                        for _ in range(SENT):
                            await send_audio(conn, CHUNK)
                    for _ in range(SENT):  # the same microphone, resuming: nothing raised
                        await send_audio(conn, CHUNK, resuming=True)
                    server.go.set()
                    while events.count("session.created") < 2:  # noqa: ASYNC110 - as above
                        await asyncio.sleep(0.01)
                    await send_audio(conn, LAST, resuming=True)  # after the resume: sent
                    while LAST_B64 not in server.appended:  # noqa: ASYNC110 - the server counts as it reads
                        await asyncio.sleep(0.01)
            finally:
                reader.cancel()
    assert "session_id=sess_1" in server.paths[1]
    # What the queue held went out on the resumed connection, the rest was dropped, then the last one.
    held = server.appended[:-1]
    assert server.appended[-1] == LAST_B64 and set(held) == {CHUNK_B64}
    assert 1 <= len(held) < SENT, len(held)
