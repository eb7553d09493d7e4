"""Which model run gets the region's cores next: first audio before the rest of an answer.

With several turns admitted, their model runs (Whisper on a turn's audio, Kokoro on each clause)
compete for the same cores. A caller waiting for a first word waits on its transcription and its
first clause; a caller already listening has the audio of the clauses before to cover the next
one. So runs are ordered: ``urgent`` ones (a transcription, a turn's first clause) before the
later clauses of answers already speaking, first come first served within each; at most ``slots``
run at once (a run is never stopped for another: the wait is at most one clause).

A later clause is not starved: once it has waited ``promote_after_s`` it goes before the urgent
runs (the caller hears a gap by then, and the router takes a long enough silence for a dead
region: ``router.deadlines``).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

UNORDERED = 1 << 30
"""``slots`` for no limit: every run is let in at once (stand-in stages in tests)."""


class CpuOrder:
    def __init__(self, slots: int, *, promote_after_s: float = 2.0) -> None:
        if slots < 1:
            raise ValueError("slots must be >= 1")
        self.slots = slots
        self.promote_after_s = promote_after_s
        self.running = 0
        self._urgent: deque[asyncio.Future[None]] = deque()
        self._later: deque[tuple[float, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        return sum(not f.done() for f in self._urgent) + sum(not f.done() for _, f in self._later)

    @asynccontextmanager
    async def slot(self, *, urgent: bool) -> AsyncIterator[None]:
        """Hold one of the slots for a model run; ``urgent`` runs are let in first."""
        if self.running < self.slots and not self.waiting:
            self.running += 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if urgent:
                self._urgent.append(turn)
            else:
                self._later.append((time.monotonic(), turn))
            try:
                await turn  # (``_release`` counted it in ``running`` when it set it)
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
        while self.running < self.slots and (turn := self._next()) is not None:
            if not turn.done():  # (a cancelled waiter's future is done: skipped)
                self.running += 1
                turn.set_result(None)

    def _next(self) -> asyncio.Future[None] | None:
        starved = self._later and time.monotonic() - self._later[0][0] >= self.promote_after_s
        if self._urgent and not starved:
            return self._urgent.popleft()
        return self._later.popleft()[1] if self._later else None
