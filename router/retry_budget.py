"""A token bucket shared by all turns: failovers draw from it, so a storm cannot multiply load.

When every region is failing, each turn retrying on every other region would multiply the load on
the survivors exactly when they can least take it. The bucket refills at ``rate`` tokens a second
up to ``burst``; a failover with no token left degrades the turn instead.
"""

from __future__ import annotations

import time


class RetryBudget:
    def __init__(self, *, rate_per_s: float, burst: float) -> None:
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._tokens = burst
        self._at = time.monotonic()
        self.refused = 0

    def available(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return min(self.burst, self._tokens + (now - self._at) * self.rate_per_s)

    def try_spend(self, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self._tokens = self.available(now)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.refused += 1
        return False
