"""A function call across a region failure, at the two precise points that matter, against scripted
stand-in regions (``router.testing``): no model is under test, the router and the sockets are real.

* The region dies while its call is being written (before its ``tool_calls`` message): nothing of the
  call was passed on, and the next region writes it; the edge gets exactly one.
* The region dies after its call was passed on: the turn completes with that call; no other region
  is asked, so no second call can be written.

The same against real regions and a real vLLM (SIGKILL) is ``test_tool_failover_live.py``.
"""

from __future__ import annotations

import asyncio

from router.api import RoutedEvent, SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Admit, Call, Crash, Done, Hang, Hear, ScriptedRegion, speak
from tests.router.conftest import EDGE, FAR, NEAR
from wire.client import ClauseAudio
from wire.turn import NamedTool, Tool, ToolCalls, TurnDone, TurnStart

GUARD_S = 60.0
WEATHER = Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def start(turn_id: str) -> TurnStart:
    return TurnStart(
        turn_id=turn_id, text="Weather in Paris?", tools=[WEATHER], tool_choice=NamedTool(name="get_weather")
    )


def settings(**kw: float) -> RouterSettings:
    return RouterSettings(location=EDGE, probe_interval_s=0, **kw)  # type: ignore[arg-type]


async def run(router: Router, start: TurnStart) -> list[RoutedEvent]:
    async with asyncio.timeout(GUARD_S):
        return [ev async for ev in router.run_turn(SessionRouting("s-tools"), start)]


def calls(events: list[RoutedEvent]) -> list[ToolCalls]:
    return [ev for ev in events if isinstance(ev, ToolCalls)]


async def test_a_region_dying_while_writing_the_call_has_the_next_region_write_it_once() -> None:
    async with (
        ScriptedRegion("victim", lambda _s: [Admit(), Hear(), Crash()]) as victim,
        ScriptedRegion(
            "survivor", lambda _s: [Admit(), Hear(), Call("get_weather", '{"city": "Paris"}'), Done()]
        ) as survivor,
    ):
        registry = Registry(regions=[victim.record(NEAR), survivor.record(FAR)])
        async with Router(settings(), registry=registry) as router:
            events = await run(router, start("t-writing"))
    (sent,) = calls(events)
    assert [c.name for c in sent.calls] == ["get_weather"] and sent.calls[0].id.startswith("survivor")
    assert isinstance(events[-1], TurnDone) and events[-1].region == survivor.id
    # The survivor was asked for the same call: the turn's tools and tool_choice travelled with it.
    (again,) = survivor.starts
    assert again.tools == [WEATHER] and again.tool_choice == NamedTool(name="get_weather")


async def test_a_region_dying_after_its_call_was_passed_on_completes_the_turn_with_that_call() -> None:
    async with (
        ScriptedRegion(
            "victim",
            lambda _s: [
                Admit(),
                Hear(),
                *speak("Let me look."),
                Call("get_weather", '{"city": "Paris"}'),
                Crash(),
            ],
        ) as victim,
        ScriptedRegion(
            "survivor", lambda _s: [Admit(), Hear(), Call("get_weather", "{}"), Done()]
        ) as survivor,
    ):
        registry = Registry(regions=[victim.record(NEAR), survivor.record(FAR)])
        async with Router(settings(), registry=registry) as router:
            events = await run(router, start("t-called"))
    (sent,) = calls(events)
    assert sent.calls[0].id.startswith("victim")
    assert [ev.clause.text for ev in events if isinstance(ev, ClauseAudio)] == ["Let me look."]
    done = events[-1]
    assert isinstance(done, TurnDone) and done.status == "completed" and done.region == victim.id
    assert survivor.starts == [], "another region was asked for the answer after its call was out"


async def test_a_region_hanging_after_its_call_completes_the_turn_at_its_deadline() -> None:
    release = asyncio.Event()
    async with (
        ScriptedRegion(
            "victim", lambda _s: [Admit(), Hear(), Call("get_weather", '{"city": "Rome"}'), Hang(release)]
        ) as victim,
        ScriptedRegion(
            "survivor", lambda _s: [Admit(), Hear(), Call("get_weather", "{}"), Done()]
        ) as survivor,
    ):
        registry = Registry(regions=[victim.record(NEAR), survivor.record(FAR)])
        cfg = settings(first_byte_floor_s=0.5, first_audio_floor_s=0.5, stall_floor_s=0.5)
        async with Router(cfg, registry=registry) as router:
            events = await run(router, start("t-hang"))
        release.set()
    (sent,) = calls(events)
    assert sent.calls[0].arguments == '{"city": "Rome"}'
    assert isinstance(events[-1], TurnDone) and events[-1].region == victim.id
    assert survivor.starts == []
