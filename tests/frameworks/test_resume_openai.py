"""The stock ``openai`` SDK resumes a spoken session across a graceful edge restart: two real edges
sharing a real Redis behind a loopback balancer, real speech through a real region. The client is
``voicemesh.realtime.connect`` with ``Resuming`` (the SDK's own ``on_reconnecting`` hook adding
``session_id``): nothing else in the client knows about edges.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from edge.app.server import drain
from tests.fixtures.edge import EdgeFactory
from tests.fixtures.region import RunningRegion
from voicemesh.drills.faults import Balancer
from voicemesh.realtime import Reply, Resuming, collect_reply, connect, stream_audio
from wire.audio import FloatAudio

from .conftest import QUESTION, SECOND_QUESTION, TURN_TIMEOUT_S

KEY = "vm-resume-framework-key"


async def test_a_spoken_session_survives_an_edge_drain_with_the_stock_sdk(
    edge_factory: EdgeFactory, region: RunningRegion, redis_url: str, say: Callable[[str], FloatAudio]
) -> None:
    a = await edge_factory([region], store_url=redis_url, api_keys=(KEY,))
    b = await edge_factory([region], store_url=redis_url, api_keys=(KEY,))
    lb = Balancer([int(e.http_url.rsplit(":", 1)[1]) for e in (a, b)])  # first connection: edge a
    await lb.start()
    resume = Resuming()
    try:
        async with connect(f"ws://127.0.0.1:{lb.port}/v1", KEY, resume=resume, max_retries=6) as conn:
            created = await conn.recv()
            resume.seen(created)
            sid = resume.session_id
            assert sid in a.services.sessions.live
            await stream_audio(conn, say(QUESTION), pace=0)
            first = await collect_reply(conn, Reply(), timeout_s=TURN_TIMEOUT_S)
            assert first.status == "completed" and first.transcript and first.text

            await drain(a.services, print)  # SIGTERM's path: resume_required, then 1012
            seen: list[Any] = []
            async with asyncio.timeout(60):
                async for event in conn:  # the SDK reconnects through the balancer, to edge b
                    seen.append(event)
                    if str(event.type) == "voicemesh.session.resumed":  # a vendor event
                        break
            types = [e.type for e in seen]
            assert types[0] == "voicemesh.session.resume_required"
            created_again = next(e for e in seen if e.type == "session.created")
            assert created_again.session.model_extra["id"] == sid and resume.reconnects >= 1
            items = [e.item for e in seen if e.type == "conversation.item.done"]
            assert [i.role for i in items] == ["user", "assistant"]
            assert items[0].content[0].transcript == first.transcript
            assert sid in b.services.sessions.live and sid not in a.services.sessions.live

            await stream_audio(conn, say(SECOND_QUESTION), pace=0)
            second = await collect_reply(conn, Reply(), timeout_s=TURN_TIMEOUT_S)
            assert second.status == "completed" and second.text
            live = b.services.sessions.live[sid]
            roles = [i.role for i in live.conversation.items]  # type: ignore[attr-defined]
            assert roles == ["user", "assistant", "user", "assistant"]
    finally:
        await lb.stop()
