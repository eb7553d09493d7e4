"""Which model run gets the region's cores next: no caller left waiting who need not be.

With several turns admitted, their model runs (Whisper on a turn's audio, Kokoro on each clause)
compete for the same cores. A caller waiting for a first word waits on its transcription and its
first clause: those runs are ``urgent``. A caller already listening has the audio of the clauses
before to cover the next one, but only until that audio has been played: a later clause carries
``start_by``, the time it must start for its audio to follow without a gap (``region.playout``).

So when a slot frees: a later clause whose ``start_by`` comes before the head urgent run would be
done (``now + its expected_s``) goes first, the earliest start-by first: letting the first clause go
would make that caller hear a silence in the middle of the answer. Otherwise urgent runs go first,
first come first served, and then the later clauses by start-by. At most ``slots`` run at once (a run
is never stopped for another). A later clause without a start-by (its playout unknown) gets one
``promote_after_s`` after it queued, so nothing is starved.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
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
        self.dry_first = 0
        """Later clauses let in before a waiting urgent run because their caller would run dry."""
        self._urgent: deque[tuple[float, asyncio.Future[None]]] = deque()
        self._later: list[tuple[float, int, asyncio.Future[None]]] = []  # heap by start-by
        self._seq = itertools.count()

    @property
    def waiting(self) -> int:
        return sum(not f.done() for _, f in self._urgent) + sum(not f.done() for _, _, f in self._later)

    @asynccontextmanager
    async def slot(
        self, *, urgent: bool, start_by: float | None = None, expected_s: float = 0.0
    ) -> AsyncIterator[None]:
        """Hold one of the slots for a model run. ``urgent``: a caller waits for its first word;
        else ``start_by`` (monotonic) is when the run must start for its caller to hear no gap.
        ``expected_s``: how long the run is expected to hold the slot."""
        if self.running < self.slots and not self.waiting:
            self.running += 1
        else:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            if urgent:
                self._urgent.append((expected_s, turn))
            else:
                due = time.monotonic() + self.promote_after_s if start_by is None else start_by
                heapq.heappush(self._later, (due, next(self._seq), turn))
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
        while self._urgent and self._urgent[0][1].done():
            self._urgent.popleft()  # cancelled while waiting
        while self._later and self._later[0][2].done():
            heapq.heappop(self._later)
        if self._urgent:
            urgent_s, _ = self._urgent[0]
            if self._later and self._later[0][0] < time.monotonic() + urgent_s:
                self.dry_first += 1
                return heapq.heappop(self._later)[2]
            return self._urgent.popleft()[1]
        return heapq.heappop(self._later)[2] if self._later else None
