"""When the region queues a turn, the client hears about it: position and estimated wait, as a
``voicemesh.turn.queued`` event the stock client yields like any other."""

from __future__ import annotations

import asyncio
import re

from tests.fixtures.edge import EdgeFactory
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import Reply, client, collect_reply


async def test_queued_turn_reports_position_and_wait(
    edge_factory: EdgeFactory, region_factory: RegionFactory
) -> None:
    region = region_factory("edge-queue", max_concurrent=1, max_queue=3)
    edge = await edge_factory([region])

    async def ask(text: str) -> Reply:
        async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
            await conn.recv()
            await conn.session.update(session={"type": "realtime", "max_output_tokens": 30})
            await conn.conversation.item.create(
                item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
            )
            await conn.response.create()
            return await collect_reply(conn, Reply(), timeout_s=120)

    replies = await asyncio.gather(ask("Say hello."), ask("Say goodbye."), ask("Count to three."))
    queued = [e for r in replies for e in r.events if e.type == "voicemesh.turn.queued"]
    assert queued, [r.types for r in replies]
    assert all(e.position >= 1 and e.estimated_wait_s >= 0 for e in queued)
    shown = [(r.status, len(r.audio), r.text, r.types[-3:]) for r in replies]
    assert all(r.status == "completed" for r in replies), shown
    # Every queued turn is answered in full. The tiny CPU model now and then answers with nothing
    # speakable (an emoji, a bare "!"): no words, so no audio; words are never without their audio.
    assert all(r.audio or not re.search(r"[A-Za-z0-9]", r.text) for r in replies), shown
    assert any(r.audio for r in replies), shown
    assert all(r.metadata.get("voicemesh_region") == "edge-queue" for r in replies)
