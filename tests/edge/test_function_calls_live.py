"""A SIGKILL of the serving region in the middle of a tool-calling turn, end to end: the stock openai
SDK, a real edge, two real regions and the real vLLM. The call arrives exactly once, valid, written
by the region that survived, and the response completes with it.

The region is killed when the client learns where the turn went (``voicemesh.turn.routed``): its
turn is then being heard or its call written, and nothing of the call has left it (a region sends
a call whole, once). The precise points (dying while the call is written / after it was passed on)
are pinned with scripted regions in ``tests/router/test_tool_failover.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from typing import Any

from tests.fixtures.edge import EdgeFactory
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import Reply, connect, stream_audio
from wire.audio import FloatAudio

TURN_TIMEOUT_S = 180.0
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


async def test_sigkill_of_the_serving_region_mid_call_delivers_the_call_exactly_once(
    edge_factory: EdgeFactory, region_factory: RegionFactory
) -> None:
    regions = {r.id: r for r in (region_factory("tool-kill-a"), region_factory("tool-kill-b"))}
    edge = await edge_factory(list(regions.values()))
    killed: list[str] = []
    reply = Reply()
    async with connect(edge.url, edge.api_key, max_retries=0) as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(session={"type": "realtime", "tools": [WEATHER], "tool_choice": "required"})
        await conn.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Weather in Rome?"}],
            }
        )
        await conn.response.create()
        async with asyncio.timeout(TURN_TIMEOUT_S):
            async for event in conn:
                reply.events.append(event)
                if event.type == "voicemesh.turn.routed" and not killed:
                    region: str = (event.model_extra or {})["region"]
                    os.kill(regions[region].pid, signal.SIGKILL)
                    killed.append(region)
                if event.type == "response.done":
                    break
    types = [e.type for e in reply.events]
    assert killed, types
    failed_over = [e for e in reply.events if e.type == "voicemesh.turn.failed_over"]
    assert failed_over, f"the kill was not noticed: {types}"
    response = next(e for e in reply.events if e.type == "response.done").response
    assert response.status == "completed", response.status_details
    calls = [o for o in response.output if o.type == "function_call"]
    dones = [e for e in reply.events if e.type == "response.function_call_arguments.done"]
    added = [
        e for e in reply.events if e.type == "response.output_item.added" and e.item.type == "function_call"
    ]
    assert len(calls) == len(dones) == len(added) == 1, types  # exactly once
    assert calls[0].call_id == dones[0].call_id == added[0].item.call_id
    assert isinstance(json.loads(dones[0].arguments).get("city"), str)
    survivor = next(r for r in regions if r not in killed)
    assert (response.metadata or {}).get("voicemesh_region") == survivor


async def test_sigkill_once_the_region_has_heard_the_question_still_gives_one_call(
    edge_factory: EdgeFactory, region_factory: RegionFactory, say: Callable[[str], FloatAudio]
) -> None:
    """Spoken, with input transcription on: the region is killed when its transcript reaches the
    client, i.e. while it writes the call (SmolLM2 takes ~0.5 s) or, if it was quicker, just after.
    Either way the client gets the call once: rewritten by the survivor from the transcript, or the
    victim's, with the turn completed on it."""
    regions = {r.id: r for r in (region_factory("tool-heard-a"), region_factory("tool-heard-b"))}
    edge = await edge_factory(list(regions.values()))
    killed: list[str] = []
    events: list[Any] = []
    async with connect(edge.url, edge.api_key, max_retries=0) as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(
            session={
                "type": "realtime",
                "tools": [WEATHER],
                "tool_choice": {"type": "function", "name": "get_weather"},
                "audio": {"input": {"transcription": {"model": "whisper-1"}}},
            }
        )
        await stream_audio(conn, say("What is the weather like in Rome?"), pace=0)
        serving = ""
        async with asyncio.timeout(TURN_TIMEOUT_S):
            async for event in conn:
                events.append(event)
                if event.type == "voicemesh.turn.routed":
                    serving = (event.model_extra or {})["region"]
                elif event.type == "conversation.item.input_audio_transcription.completed" and not killed:
                    os.kill(regions[serving].pid, signal.SIGKILL)
                    killed.append(serving)
                elif event.type == "response.done":
                    break
    types = [e.type for e in events]
    assert killed, types
    response = next(e for e in events if e.type == "response.done").response
    assert response.status == "completed", response.status_details
    calls = [o for o in response.output if o.type == "function_call"]
    dones = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert len(calls) == len(dones) == 1 and calls[0].call_id == dones[0].call_id, types
    assert isinstance(json.loads(dones[0].arguments).get("city"), str)
    moved = [e for e in events if e.type == "voicemesh.turn.failed_over"]
    if moved:  # killed mid-call: the survivor wrote it, from the transcript
        assert moved[0].model_extra["from_region"] == killed[0]
        assert types.index("voicemesh.turn.failed_over") < types.index(
            "response.function_call_arguments.done"
        )
    print(f"killed {killed[0]}; failed over: {bool(moved)}; call {dones[0].arguments}")
