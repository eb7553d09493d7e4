"""``region.cpu_order``: model runs across turns, a transcription or a first clause before the later
clauses of answers already speaking; a cancelled waiter gives its place up, and a run that ends
(or fails) passes its slot on."""

from __future__ import annotations

import asyncio
import time

import pytest

from region.cpu_order import CpuOrder


async def _run(order: CpuOrder, name: str, urgent: bool, ran: list[str], gate: asyncio.Event) -> None:
    async with order.slot(urgent=urgent):
        ran.append(name)
        await gate.wait()


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_urgent_runs_go_first_then_first_come_first_served() -> None:
    order, ran, gate = CpuOrder(1), list[str](), asyncio.Event()
    tasks = [asyncio.create_task(_run(order, "clause 2 of A", False, ran, gate))]
    await _settle()  # A's later clause holds the only slot
    for name, urgent in [
        ("clause 3 of A", False),
        ("stt of B", True),
        ("clause 2 of C", False),
        ("first clause of D", True),
    ]:
        tasks.append(asyncio.create_task(_run(order, name, urgent, ran, gate)))
        await _settle()
    assert ran == ["clause 2 of A"] and order.waiting == 4
    gate.set()
    await asyncio.gather(*tasks)
    assert ran == ["clause 2 of A", "stt of B", "first clause of D", "clause 3 of A", "clause 2 of C"]
    assert order.running == 0 and order.waiting == 0


async def test_a_cancelled_waiter_gives_up_its_place_and_a_failed_run_its_slot() -> None:
    order, ran, gate = CpuOrder(1), list[str](), asyncio.Event()
    holder = asyncio.create_task(_run(order, "a", False, ran, gate))
    await _settle()
    gone = asyncio.create_task(_run(order, "cancelled", True, ran, gate))
    later = asyncio.create_task(_run(order, "b", False, ran, gate))
    await _settle()
    gone.cancel()
    await _settle()
    assert order.waiting == 1
    gate.set()
    await asyncio.gather(holder, later)
    assert ran == ["a", "b"] and gone.cancelled()

    with pytest.raises(RuntimeError):
        async with order.slot(urgent=True):
            raise RuntimeError("model failed")
    assert order.running == 0  # the slot came back


async def test_runs_up_to_the_slots_go_at_once() -> None:
    order, ran, gate = CpuOrder(2), list[str](), asyncio.Event()
    tasks = [asyncio.create_task(_run(order, str(i), False, ran, gate)) for i in range(3)]
    await _settle()
    assert ran == ["0", "1"] and order.running == 2 and order.waiting == 1
    gate.set()
    await asyncio.gather(*tasks)
    assert ran == ["0", "1", "2"]


async def test_a_later_clause_that_waited_long_enough_goes_first() -> None:
    order, ran, gate = CpuOrder(1, promote_after_s=0.0), list[str](), asyncio.Event()
    tasks = [asyncio.create_task(_run(order, "holder", False, ran, gate))]
    await _settle()
    for name, urgent in [("clause 2 of A", False), ("stt of B", True)]:
        tasks.append(asyncio.create_task(_run(order, name, urgent, ran, gate)))
        await _settle()
    gate.set()
    await asyncio.gather(*tasks)
    assert ran == ["holder", "clause 2 of A", "stt of B"]  # waited its promote_after_s (0 s) already


async def _run_by(order: CpuOrder, name: str, start_by: float, ran: list[str], gate: asyncio.Event) -> None:
    async with order.slot(urgent=False, start_by=start_by, expected_s=0.5):
        ran.append(name)
        await gate.wait()


async def test_a_later_clause_whose_caller_runs_dry_goes_before_a_first_clause() -> None:
    order, ran, gate = CpuOrder(1), list[str](), asyncio.Event()
    now = time.monotonic()
    tasks = [asyncio.create_task(_run(order, "holder", False, ran, gate))]
    await _settle()
    for task in [
        _run(order, "first clause of B", True, ran, gate),
        _run_by(order, "clause 2 of A (an hour of audio left)", now + 3600, ran, gate),
        _run_by(order, "clause 2 of C (dry now)", now, ran, gate),
    ]:
        tasks.append(asyncio.create_task(task))
        await _settle()
    gate.set()
    await asyncio.gather(*tasks)
    assert ran == [
        "holder",
        "clause 2 of C (dry now)",
        "first clause of B",
        "clause 2 of A (an hour of audio left)",
    ]
    assert order.dry_first == 1
