"""Admission on a real region with one slot and a queue of one: queue (position reported), then busy."""

from __future__ import annotations

import asyncio

import httpx

from tests.fixtures.region import RegionFactory
from wire.client import RegionConnection, collect_turn
from wire.turn import TextDelta, TurnAdmitted, TurnDone, TurnQueued, TurnRejected, TurnStart

LONG = TurnStart(turn_id="a", text="Tell me a long story about the sea.", max_output_tokens=300)


async def test_beyond_capacity_turns_queue_then_get_busy(region_factory: RegionFactory) -> None:
    region = region_factory("test-admission", max_concurrent=1, max_queue=1)
    a, b, c = [await RegionConnection.open(region.url, region=region.id) for _ in range(3)]
    try:
        await a.start(LONG)
        a_events = a.events()
        assert isinstance(await anext(a_events), TurnAdmitted)

        await b.start(TurnStart(turn_id="b", text="Say hello.", max_output_tokens=20))
        b_events = b.events()
        queued = await anext(b_events)
        assert isinstance(queued, TurnQueued) and queued.position == 1 and queued.estimated_wait_s > 0

        async with httpx.AsyncClient() as http:
            health = (await http.get(f"{region.url}/health", headers=region.headers())).json()
        assert (health["active"], health["free_slots"], health["queue_depth"]) == (1, 0, 1)
        assert health["load"] == 2.0

        await c.start(TurnStart(turn_id="c", text="Hi."))
        rejected = await anext(c.events())
        assert isinstance(rejected, TurnRejected) and rejected.code == "busy" and rejected.retry_after_s > 0

        # The running turn ends (cancelled here, to keep the test short): the queued one goes next.
        async for ev in a_events:
            if isinstance(ev, TextDelta):
                await a.cancel("a")
        b_rest = [ev async for ev in b_events]
        admitted = next(ev for ev in b_rest if isinstance(ev, TurnAdmitted))
        done = b_rest[-1]
        assert admitted.queued_s > 0
        assert isinstance(done, TurnDone) and done.status == "completed" and done.timings["queued_s"] > 0

        # The rejected connection is still usable once the region has room again.
        result = await collect_turn(c, TurnStart(turn_id="c2", text="Hi.", max_output_tokens=10))
        assert result.status == "completed"
    finally:
        for conn in (a, b, c):
            await conn.close()


async def test_a_queued_turn_that_disconnects_leaves_the_queue(region_factory: RegionFactory) -> None:
    region = region_factory("test-admission", max_concurrent=1, max_queue=1)
    a = await RegionConnection.open(region.url)
    b = await RegionConnection.open(region.url)
    try:
        await a.start(LONG)
        a_events = a.events()
        assert isinstance(await anext(a_events), TurnAdmitted)
        await b.start(TurnStart(turn_id="b", text="Hi."))
        assert isinstance(await anext(b.events()), TurnQueued)
        await b.close()
        async with httpx.AsyncClient() as http:
            for _ in range(200):  # polls for up to 10 s: a busy machine may be slow to notice
                health = await http.get(f"{region.url}/health", headers=region.headers())
                if health.json()["queue_depth"] == 0:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the disconnected turn is still queued")
        await a.cancel("a")
        assert [ev async for ev in a_events][-1].status == "cancelled"  # type: ignore[union-attr]
    finally:
        await a.close()
