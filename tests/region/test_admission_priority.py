"""Priority classes in a region's admission queue (issue 17): ``high`` before ``normal`` before
``low``, FIFO within a class, positions re-reported when a higher class moves a turn back, a
cancelled waiter leaving its line, one bound for the whole queue. Real asyncio, no model."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from region.admission import Admission
from wire.errors import RegionBusy
from wire.turn import Priority

GUARD_S = 10.0


class Line:
    """Turns of given classes queued behind one held slot; records admission order and positions."""

    def __init__(self, adm: Admission) -> None:
        self.adm = adm
        self.order: list[str] = []
        self.positions: dict[str, list[tuple[int, float]]] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._hold = asyncio.Event()
        self._changed = asyncio.Event()
        """Set on every report and admission: what ``until`` waits on."""

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition`` holds (bounded: a bug fails, it does not hang)."""
        async with asyncio.timeout(GUARD_S):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    async def hold_the_slot(self) -> None:
        async def holder() -> None:
            async with self.adm.slot(lambda p, w: asyncio.sleep(0)):
                self._changed.set()
                await self._hold.wait()

        self.tasks["holder"] = asyncio.create_task(holder())
        await self.until(lambda: self.adm.active == 1)

    def queue(self, name: str, priority: Priority) -> None:
        self.positions[name] = []

        async def on_queued(position: int, wait: float) -> None:
            self.positions[name].append((position, wait))
            self._changed.set()

        async def turn() -> None:
            async with self.adm.slot(on_queued, priority):
                self.order.append(name)
                await asyncio.sleep(0)

        self.tasks[name] = asyncio.create_task(turn())

    async def queued(self, name: str) -> None:
        await self.until(lambda: bool(self.positions[name]))

    async def release(self) -> None:
        self._hold.set()
        await asyncio.gather(*(t for t in self.tasks.values() if not t.cancelled()), return_exceptions=True)


async def test_high_is_admitted_before_normal_before_low_and_fifo_within_a_class() -> None:
    line = Line(Admission(max_concurrent=1, max_queue=6, initial_turn_s=1.0))
    await line.hold_the_slot()
    for name, priority in [("low1", "low"), ("norm1", "normal"), ("low2", "low"), ("high1", "high"),
                           ("norm2", "normal"), ("high2", "high")]:  # fmt: skip
        line.queue(name, priority)  # type: ignore[arg-type]
        await line.queued(name)
    await line.release()
    assert line.order == ["high1", "high2", "norm1", "norm2", "low1", "low2"]
    assert (line.adm.active, line.adm.queued) == (0, 0)


async def test_a_higher_class_arriving_moves_the_lower_ones_back_and_tells_them() -> None:
    line = Line(Admission(max_concurrent=1, max_queue=4, initial_turn_s=2.0))
    await line.hold_the_slot()
    line.queue("low", "low")
    await line.queued("low")
    line.queue("normal", "normal")
    await line.queued("normal")
    await line.until(lambda: line.positions["low"][-1][0] == 2)
    line.queue("high", "high")
    await line.queued("high")
    await line.until(lambda: line.positions["low"][-1][0] == 3)
    # Each report is the position then and its estimate (one slot, 2 s a turn), as for a FIFO queue.
    assert line.positions["low"] == [(1, 2.0), (2, 4.0), (3, 6.0)]
    assert line.positions["normal"] == [(1, 2.0), (2, 4.0)]
    assert line.positions["high"] == [(1, 2.0)]
    await line.release()
    assert line.order == ["high", "normal", "low"]


async def test_a_cancelled_waiter_leaves_its_class_and_the_others_move_up() -> None:
    line = Line(Admission(max_concurrent=1, max_queue=4))
    await line.hold_the_slot()
    line.queue("high", "high")
    await line.queued("high")
    line.queue("low", "low")
    await line.queued("low")
    assert line.positions["low"][-1][0] == 2
    line.tasks["high"].cancel()
    await line.until(lambda: line.positions["low"][-1][0] == 1)
    assert line.adm.queued == 1
    await line.release()
    assert line.order == ["low"] and line.tasks["high"].cancelled()
    assert (line.adm.active, line.adm.queued) == (0, 0)


async def test_the_queue_bound_counts_every_class_and_high_is_not_let_past_it() -> None:
    line = Line(Admission(max_concurrent=1, max_queue=2))
    await line.hold_the_slot()
    line.queue("low1", "low")
    line.queue("low2", "low")
    await line.queued("low1")
    await line.queued("low2")
    with pytest.raises(RegionBusy):
        async with line.adm.slot(lambda p, w: asyncio.sleep(0), "high"):
            pass
    await line.release()
    assert line.order == ["low1", "low2"]
