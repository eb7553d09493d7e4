"""Live turns first: batch work (``priority: "batch"``, a speech batch's items) runs only on what
live turns leave idle, and gives way at once when one arrives.

A batch turn takes no admission slot and never queues: with ``max_batch`` batch turns already
running it hears "busy" at once (the edge's batch worker tries again later). While it runs, it
synthesises one clause at a time, and only while no live turn is running or waiting
(``idle()``). A live turn that arrives mid-clause stops that clause's synthesis through its
``CancelToken`` (``preempting``): the clause is said again, whole, once live turns are done, so a
batch costs a live caller at most the few milliseconds onnxruntime takes to stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from region.cancel import CancelToken
from wire.errors import RegionBusy

RETRY_AFTER_S = 5.0
"""What a batch turn refused for want of a batch slot is told to wait."""


class LiveFirst:
    def __init__(self, max_batch: int, *, region: str = "") -> None:
        if max_batch < 0:
            raise ValueError("max_batch must be >= 0")
        self.max_batch = max_batch
        self.region = region
        self.live = 0
        """Live turns running or waiting for a slot."""
        self.batch = 0
        """Batch turns running."""
        self.preemptions = 0
        """Batch clauses stopped mid-synthesis by a live turn."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._clauses: set[CancelToken] = set()

    @contextmanager
    def live_turn(self) -> Iterator[None]:
        """Around a live turn's whole stay (queue and slot): batch work waits, and stops its clause."""
        self.live += 1
        self._idle.clear()
        for token in self._clauses:
            self.preemptions += 1
            token.cancel()
        try:
            yield
        finally:
            self.live -= 1
            if not self.live:
                self._idle.set()

    @asynccontextmanager
    async def batch_turn(self) -> AsyncIterator[None]:
        """Around a batch turn; ``RegionBusy`` at once when ``max_batch`` already run."""
        if self.batch >= self.max_batch:
            raise RegionBusy(
                f"region {self.region} has no room for batch work: {self.batch} batch turns running",
                region=self.region,
                retry_after_s=RETRY_AFTER_S,
            )
        self.batch += 1
        try:
            yield
        finally:
            self.batch -= 1

    async def idle(self) -> None:
        """Until no live turn runs or waits, as of the return: a live turn may arrive between the
        event being set and this waiter running (it cleared the event again), then wait on."""
        while not self._idle.is_set():
            await self._idle.wait()

    @contextmanager
    def preempting(self, token: CancelToken) -> Iterator[None]:
        """A batch clause's synthesis, which a live turn arriving cancels (``token``)."""
        if not self._idle.is_set():
            token.cancel()  # a live turn came in between idle() and here
        self._clauses.add(token)
        try:
            yield
        finally:
            self._clauses.discard(token)


__all__ = ["LiveFirst"]
