"""Which model run gets the region's cores next: first audio before the rest of an answer.

With several turns admitted, their model runs (Whisper on a turn's audio, Kokoro on each clause)
compete for the same cores. A caller waiting for a first word waits on its transcription and its
first clause; a caller already listening has the audio of the clauses before to cover the next
one. So runs are ordered: ``urgent`` ones (a transcription, a turn's first clause) before the
later clauses of answers already speaking, first come first served within each; at most ``slots``
run at once (a run is never stopped for another: the wait is at most one clause).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

UNORDERED = 1 << 30
"""``slots`` for no limit: every run is let in at once (stand-in stages in tests)."""


class CpuOrder:
    def __init__(self, slots: int) -> None:
        if slots < 1:
            raise ValueError("slots must be >= 1")
        self.slots = slots
        self.running = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(not f.done() for _, _, f in self._waiting)

    @asynccontextmanager
    async def slot(self, *, urgent: bool) -> AsyncIterator[None]:
        """Hold one of the slots for a model run; ``urgent`` runs are let in first."""
        if self.running < self.slots and not self.waiting:
            self.running += 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (0 if urgent else 1, next(self._arrivals), turn))
            try:
                await turn  # (``_next`` counted it in ``running`` when it set it)
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._release()  # let in just as it was cancelled: pass the slot on
                raise
        try:
            yield
        finally:
            self._release()

    def _release(self) -> None:
        self.running -= 1
        while self._waiting and self.running < self.slots:
            _, _, turn = heapq.heappop(self._waiting)
            if not turn.done():  # (a cancelled waiter's future is done: skipped)
                self.running += 1
                turn.set_result(None)
