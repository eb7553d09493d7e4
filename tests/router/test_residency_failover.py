"""A session's residency holds on every attempt of a turn (issue 17): a failover moves only to a
region of the residency, and with none left the turn degrades, saying which region failed and why,
even while a region elsewhere is healthy. Scripted stand-in regions (``router.testing``): no model
is under test, the router and its sockets are real."""

from __future__ import annotations

import asyncio

from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Crash, ScriptedRegion, answer, speak
from tests.router.conftest import EDGE, FAR, NEAR
from wire.turn import TurnDone, TurnStart

GUARD_S = 30.0


def dies_mid_answer(_start: TurnStart) -> list[object]:
    return [*speak("First."), Crash()]


async def run(router: Router, session: SessionRouting, turn_id: str) -> list[RoutedEvent]:
    async with asyncio.timeout(GUARD_S):
        return [ev async for ev in router.run_turn(session, TurnStart(turn_id=turn_id, text="Hi?"))]


async def test_failover_stays_in_the_residency_and_degrades_when_it_is_spent() -> None:
    async with (
        ScriptedRegion("eu-a", dies_mid_answer) as eu_a,  # type: ignore[arg-type]
        ScriptedRegion("eu-b", dies_mid_answer) as eu_b,  # type: ignore[arg-type]
        ScriptedRegion("us", answer("From the US.")) as us,
    ):
        registry = Registry(
            regions=[eu_a.record(NEAR, ["eu"]), eu_b.record(NEAR, ["eu", "de"]), us.record(FAR, ["us"])]
        )
        async with Router(RouterSettings(location=EDGE, probe_interval_s=0), registry=registry) as router:
            events = await run(router, SessionRouting("s-eu", residency=frozenset({"eu"})), "t-eu")
            assert us.starts == [], "an EU session's turn reached the us region"
            anywhere = await run(router, SessionRouting("s-any"), "t-any")
    routed = [ev.region for ev in events if isinstance(ev, Routed)]
    assert sorted(routed) == ["eu-a", "eu-b"]
    (moved,) = [ev for ev in events if isinstance(ev, FailedOver)]
    assert (moved.from_region, moved.to_region) == (routed[0], routed[1])
    degraded = events[-1]
    assert isinstance(degraded, Degraded) and degraded.reason == "no_region_available"
    assert (degraded.failed_region, degraded.failure) == (routed[1], "region_disconnected")
    assert degraded.tried == tuple(routed)
    # Without a residency the same router goes on to the US region.
    done = anywhere[-1]
    assert isinstance(done, TurnDone) and done.region == "us"
