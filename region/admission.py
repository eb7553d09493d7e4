"""Admission control: N turns run at once, up to M wait in a queue, the rest hear "busy" at once.

The queue is ordered by the turn's priority class (``TurnStart.priority``, the caller's key's):
every ``high`` turn before every ``normal`` one before every ``low`` one, FIFO within a class. A
turn arriving in a higher class moves the lower ones back: they are told their new position. The
queue's bound counts every class together (a flood of ``low`` turns still makes ``high`` ones hear
"busy" once the queue is full: a queued turn is never evicted, it was promised a slot).

Batch turns (``priority: "batch"``) neither queue nor take a slot: ``region.live_first`` runs them
on what live turns leave idle, and every live turn here (queued or running) makes them give way.

A queued turn is told its position and an estimated wait whenever its position changes; the
estimate comes from a moving average of how long completed turns held their slot, in which each
turn weighs ``TURN_WEIGHT`` however long ago the last one ran (an idle hour does not change how long
this region's turns take). A queued turn that is cancelled (or whose connection drops) leaves the
queue and the turns behind it move up.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from region.live_first import LiveFirst
from wire.errors import RegionBusy
from wire.rates import DecayingEwma
from wire.turn import Priority

OnQueued = Callable[[int, float], Awaitable[None]]
"""``(position, estimated_wait_s)``; position 1 is next in line."""

TURN_WEIGHT = 0.2
"""Weight of the latest completed turn in the turn-length average."""

CLASSES: tuple[Priority, ...] = ("high", "normal", "low")
"""Served in this order (``batch`` is not queued: ``region.live_first``)."""


@dataclass
class _Waiter:
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    admitted: bool = False


@dataclass
class Slot:
    queued_s: float
    completed: bool = False
    """Set by the holder when the turn ran to its end: only those train the wait estimate."""


class Admission:
    def __init__(
        self, max_concurrent: int, max_queue: int, *, region: str = "", initial_turn_s: float = 5.0,
        max_batch: int = 1,
    ) -> None:  # fmt: skip
        if max_concurrent < 1 or max_queue < 0:
            raise ValueError("max_concurrent must be >= 1 and max_queue >= 0")
        self.capacity = max_concurrent
        self.queue_limit = max_queue
        self.region = region
        self.active = 0
        # The average's clock counts completed turns, not seconds: one tick apart, a sample weighs
        # 1 - exp(-1/tau) = TURN_WEIGHT.
        self._turn_s = DecayingEwma(tau_s=-1.0 / math.log1p(-TURN_WEIGHT))
        self._turn_s.update(initial_turn_s, now=0.0)
        self._completed = 0
        self._waiters: dict[Priority, deque[_Waiter]] = {c: deque() for c in CLASSES}
        self.live_first = LiveFirst(max_batch, region=region)

    @property
    def turn_s(self) -> float:
        """Moving average of a completed turn's time in its slot."""
        value = self._turn_s.value
        assert value is not None, "seeded with initial_turn_s"
        return value

    @property
    def queued(self) -> int:
        return sum(len(line) for line in self._waiters.values())

    def _position(self, waiter: _Waiter, priority: Priority) -> int:
        """1-based place in the whole queue: everyone of a higher class, then its own line."""
        ahead = 0
        for c in CLASSES:
            if c == priority:
                return ahead + self._waiters[c].index(waiter) + 1
            ahead += len(self._waiters[c])
        raise ValueError(priority)

    @property
    def free_slots(self) -> int:
        return self.capacity - self.active

    def estimated_wait(self, position: int) -> float:
        """Seconds until the turn at ``position`` gets a slot, assuming average-length turns."""
        return round(math.ceil(position / self.capacity) * self.turn_s, 2)

    @asynccontextmanager
    async def slot(self, on_queued: OnQueued, priority: Priority = "normal") -> AsyncIterator[Slot]:
        """Hold a slot for the body; waits in the queue (in ``priority``'s line) when all are taken,
        raises ``RegionBusy`` when the queue is full too. A ``batch`` turn: ``LiveFirst.batch_turn``."""
        if priority == "batch":
            async with self.live_first.batch_turn():
                yield Slot(queued_s=0.0)
            return
        with self.live_first.live_turn():
            async with self._live_slot(on_queued, priority) as slot:
                yield slot

    @asynccontextmanager
    async def _live_slot(self, on_queued: OnQueued, priority: Priority) -> AsyncIterator[Slot]:
        t0 = time.perf_counter()
        queued = self.queued
        waited = 0.0  # (a turn that found a slot free did not queue, however busy the machine is)
        if self.active < self.capacity and not queued:
            self.active += 1
        elif queued >= self.queue_limit:
            wait = self.estimated_wait(queued + 1)
            raise RegionBusy(
                f"region {self.region} is busy: {self.active} turns running, {queued} queued",
                region=self.region,
                retry_after_s=wait,
            )
        else:
            await self._wait_in_line(on_queued, priority)
            waited = round(time.perf_counter() - t0, 4)
        slot = Slot(queued_s=waited)
        held = time.perf_counter()
        try:
            yield slot
        finally:
            if slot.completed:
                self._completed += 1
                self._turn_s.update(time.perf_counter() - held, now=float(self._completed))
            self._release()

    async def _wait_in_line(self, on_queued: OnQueued, priority: Priority) -> None:
        waiter = _Waiter()
        self._waiters[priority].append(waiter)
        self._wake_all()  # the lines behind this class moved back: they report their new positions
        reported = 0
        try:
            while True:
                waiter.wake.clear()
                if waiter.admitted:
                    return
                position = self._position(waiter, priority)
                if position != reported:
                    reported = position
                    await on_queued(position, self.estimated_wait(position))
                    continue  # the line may have moved while we were reporting
                await waiter.wake.wait()
        except BaseException:
            if waiter.admitted:
                self._release()  # got the slot as we were cancelled: hand it on
            else:
                self._waiters[priority].remove(waiter)
                self._wake_all()
            raise

    def _release(self) -> None:
        line = next((self._waiters[c] for c in CLASSES if self._waiters[c]), None)
        if line is not None:
            nxt = line.popleft()  # the slot passes straight on; ``active`` is unchanged
            nxt.admitted = True
            self._wake_all()
            nxt.wake.set()
        else:
            self.active -= 1

    def _wake_all(self) -> None:
        for line in self._waiters.values():
            for w in line:
                w.wake.set()
