"""With no region reachable, the client still hears an answer: Piper at the edge, marked degraded."""

from __future__ import annotations

import asyncio
import base64
import os
import signal
from collections.abc import Callable

from router.settings import RouterSettings
from tests.edge.conftest import rms
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import Reply, client
from voicemesh.talk import talk
from wire.audio import CLIENT_RATE, FloatAudio


async def test_no_region_reachable_gets_piper_audio_marked_degraded(
    lonely_edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    reply = await talk(
        lonely_edge.url, lonely_edge.api_key, say("Hello, are you there?"), pace=2.0, timeout_s=60
    )
    assert "error" not in reply.types
    assert reply.status == "completed"
    assert reply.metadata["voicemesh_degraded"] == "true"
    assert reply.metadata["served_by"] == "edge"
    assert "voicemesh_region" not in reply.metadata
    assert reply.text == "Sorry, no region can answer right now."
    seconds = len(reply.audio) / 2 / CLIENT_RATE
    assert 1.0 < seconds < 6.0, seconds  # Piper saying the hold message, resampled to 24 kHz
    assert rms(bytes(reply.audio)) > 0.01
    assert reply.first_audio_s is not None  # (how soon is the benchmarks' business)


async def test_text_turn_degrades_too(lonely_edge: RunningEdge) -> None:
    """A typed message (conversation.item.create + response.create) degrades the same way."""
    from voicemesh.realtime import collect_reply

    async with client(lonely_edge.url, lonely_edge.api_key).realtime.connect(model="voicemesh") as conn:
        await conn.recv()
        await conn.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi there"}]}
        )
        await conn.response.create()
        reply = await collect_reply(conn, Reply(), timeout_s=60)
    assert reply.types[:2] == ["conversation.item.added", "conversation.item.done"]
    assert reply.metadata["voicemesh_degraded"] == "true"
    assert len(reply.audio) > CLIENT_RATE  # more than half a second of speech


STORY = "Tell me a long story about a knight and a dragon, in at least ten sentences."


async def test_region_stalls_mid_answer_piper_speaks_the_rest(
    edge_factory: EdgeFactory, region_factory: RegionFactory
) -> None:
    """The region sent reply text, then hung (SIGSTOP) before its audio: the edge speaks that text."""
    region = region_factory("edge-stall")
    edge = await edge_factory(
        [region],
        router_settings=RouterSettings(
            connect_timeout_s=1.0, first_byte_floor_s=5.0, first_audio_floor_s=20.0, stall_floor_s=3.0
        ),
    )
    stopped = False
    try:
        async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
            await conn.recv()
            await conn.conversation.item.create(
                item={
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": STORY}],
                }
            )
            # A long answer: the region is still synthesising (and has text not yet voiced) when it
            # stops; a short one may be all sent before the first audio plays.
            await conn.response.create(response={"max_output_tokens": 400})
            reply = Reply()
            async with asyncio.timeout(90):
                async for event in conn:
                    reply.events.append(event)
                    if event.type == "response.output_audio_transcript.delta" and not stopped:
                        os.kill(region.pid, signal.SIGSTOP)  # text is flowing; its audio never will
                        stopped = True
                    if event.type == "response.output_audio.delta":
                        reply.audio += base64.b64decode(event.delta)
                    if event.type == "response.done":
                        reply.metadata = dict(event.response.metadata or {})
                        reply.status = event.response.status or ""
                        break
    finally:
        if stopped:
            os.kill(region.pid, signal.SIGCONT)
    assert stopped
    assert reply.status == "completed"
    assert reply.metadata["voicemesh_degraded"] == "true"
    text = "".join(e.delta for e in reply.events if e.type == "response.output_audio_transcript.delta")
    assert (
        text.strip() and edge.services.settings.hold_message not in text
    )  # the region's words, not the hold line
    assert len(reply.audio) > CLIENT_RATE // 2  # Piper audio of the region's text
