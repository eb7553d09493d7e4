"""Admission control on its own: slots, FIFO queue with positions, busy beyond the queue."""

from __future__ import annotations

import asyncio
import time

import pytest

from region.admission import Admission
from wire.errors import RegionBusy


async def test_queue_reports_positions_admits_in_order_and_rejects_beyond() -> None:
    adm = Admission(max_concurrent=1, max_queue=2, region="r", initial_turn_s=2.0)
    release = [asyncio.Event() for _ in range(3)]
    order: list[int] = []
    reports: dict[int, list[tuple[int, float]]] = {0: [], 1: [], 2: []}

    async def turn(i: int) -> None:
        async def on_queued(position: int, wait: float) -> None:
            reports[i].append((position, wait))

        async with adm.slot(on_queued) as slot:
            order.append(i)
            await release[i].wait()
            slot.completed = True

    tasks = [asyncio.create_task(turn(i)) for i in range(3)]
    await asyncio.sleep(0.01)
    assert (adm.active, adm.queued, adm.free_slots) == (1, 2, 0)
    assert reports[1] == [(1, 2.0)] and reports[2] == [(2, 4.0)]
    with pytest.raises(RegionBusy) as busy:
        async with adm.slot(lambda p, w: asyncio.sleep(0)):
            pass
    assert busy.value.retry_after_s == 6.0
    release[0].set()
    await asyncio.sleep(0.01)
    assert order == [0, 1] and reports[2][-1][0] == 1  # moved up and was told so
    release[1].set()
    release[2].set()
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2] and (adm.active, adm.queued) == (0, 0)


async def test_a_cancelled_waiter_leaves_the_queue_and_the_line_moves_up() -> None:
    adm = Admission(max_concurrent=1, max_queue=3)
    hold = asyncio.Event()
    positions: dict[str, list[int]] = {"b": [], "c": []}

    async def holder() -> None:
        async with adm.slot(lambda p, w: asyncio.sleep(0)):
            await hold.wait()

    async def waiter(name: str) -> None:
        async def on_queued(position: int, wait: float) -> None:
            positions[name].append(position)

        async with adm.slot(on_queued):
            pass

    first = asyncio.create_task(holder())
    await asyncio.sleep(0)
    b = asyncio.create_task(waiter("b"))
    c = asyncio.create_task(waiter("c"))
    await asyncio.sleep(0.01)
    b.cancel()
    await asyncio.sleep(0.01)
    assert adm.queued == 1 and positions["c"] == [2, 1]
    hold.set()
    await asyncio.gather(first, c)
    assert b.cancelled() and (adm.active, adm.queued) == (0, 0)


async def test_estimate_follows_the_turns_that_completed() -> None:
    adm = Admission(max_concurrent=2, max_queue=1, initial_turn_s=10.0)
    async with adm.slot(lambda p, w: asyncio.sleep(0)) as slot:
        slot.completed = True
    assert adm.turn_s < 10.0 * 0.81  # a near-instant turn pulled the average down
    assert adm.estimated_wait(3) == round(2 * adm.turn_s, 2)


async def _timed_turn(adm: Admission, *, completed: bool) -> tuple[float, float]:
    """Run one turn in a slot; return bounds on how long it held the slot (measured around it)."""
    t0 = time.perf_counter()
    async with adm.slot(lambda p, w: asyncio.sleep(0)) as slot:
        t1 = time.perf_counter()
        await asyncio.sleep(0)
        slot.completed = completed
        t2 = time.perf_counter()
    return t2 - t1, time.perf_counter() - t0


async def test_each_completed_turn_weighs_a_fifth_however_long_ago_the_last_one_ran() -> None:
    adm = Admission(max_concurrent=1, max_queue=0, initial_turn_s=10.0)
    low, high = await _timed_turn(adm, completed=True)
    assert 0.8 * 10.0 + 0.2 * low <= adm.turn_s <= 0.8 * 10.0 + 0.2 * high
    before = adm.turn_s
    await _timed_turn(adm, completed=False)  # a cancelled turn says nothing about turn length
    assert adm.turn_s == before
    await asyncio.sleep(0.05)  # idle time between turns does not give the next one more weight
    low, high = await _timed_turn(adm, completed=True)
    assert 0.8 * before + 0.2 * low <= adm.turn_s <= 0.8 * before + 0.2 * high
