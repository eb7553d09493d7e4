"""The region's watch on its LLM: an LLM that stops answering makes the region not ready.

The LLM is a process of its own (vLLM, reached over HTTP), and locally one vLLM may serve every
region: its death is this region's fault all the same (no turn can be answered). The watch asks the
server a cheap question (``LlmClient.check``: its model list, no generation) every ``interval_s``.
A refused connection (the process is gone) marks the LLM down at once; any other failure (a hung or
overloaded server that does not answer in time, a 5xx) only after ``misses`` in a row, so one slow
answer on a busy machine is not mistaken for a death. While down, ``/health`` says ``llm_down`` with
the reason (the router's prober stops sending turns here); when the server answers again the model
is warmed again (``load``) before the region says ready, so the first turn after it pays no
start-up cost. Whoever supervises the LLM process restarts it: the region only waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from region.protocols import LlmClient, LlmError, LlmUnreachable

log = logging.getLogger(__name__)

Report = Callable[[str], None]


class LlmWatch:
    """``down``: why the LLM cannot answer now (``None`` while it can)."""

    def __init__(
        self, llm: LlmClient, *, interval_s: float, misses: int, region: str, report: Report | None = None
    ) -> None:
        self.llm = llm
        self.interval_s = interval_s
        self.misses = max(misses, 1)
        self.region = region
        self._report = report or (lambda line: log.info("%s", line))
        self.down: str | None = None
        self.down_since: float | None = None
        self._missed = 0

    async def run(self) -> None:
        """Watch until cancelled."""
        while True:
            try:
                await self.tick()
            except Exception as exc:  # (a watch that dies would leave the region ready on a dead LLM)
                self._fail(f"the LLM's check failed unexpectedly: {exc!r}")
                log.exception("region %s: LLM watch", self.region)
            await asyncio.sleep(self.interval_s)

    async def tick(self) -> None:
        """One look at the LLM: mark it down, or (back) warm it and mark it up."""
        try:
            await self.llm.check()
        except LlmError as exc:
            self._missed += 1
            if isinstance(exc, LlmUnreachable) or self._missed >= self.misses:
                self._fail(exc.message)
            return
        self._missed = 0
        if self.down is None:
            return
        try:
            await self.llm.load()  # (checks the served model too, and warms its prompt path)
        except LlmError as exc:
            self._fail(f"back but not serving yet: {exc.message}")
            return
        took = time.monotonic() - (self.down_since or time.monotonic())
        self._report(f"region {self.region}: LLM at {self.llm.url} back and warm after {took:.1f} s; ready")
        self.down = self.down_since = None

    def _fail(self, reason: str) -> None:
        if self.down is None:
            self.down_since = time.monotonic()
            self._report(f"region {self.region}: LLM down, not ready until it is back: {reason}")
        self.down = reason
