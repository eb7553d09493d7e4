"""Rates and averages every tier needs: one token bucket, one time-decayed EWMA, one decaying count.

A region that served one turn a minute ago and nothing since must not be judged by that turn as if
it were fresh; a per-sample EWMA would do that. Here a sample's weight falls as ``exp(-age/tau)``.
"""

from __future__ import annotations

import math
import time


class DecayingEwma:
    """``update(x)`` folds a sample in with weight ``1 - exp(-dt/tau)``; the first sample sets it."""

    __slots__ = ("_at", "_value", "tau_s")

    def __init__(self, tau_s: float) -> None:
        self.tau_s = tau_s
        self._value: float | None = None
        self._at = 0.0

    def update(self, sample: float, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        if self._value is None:
            self._value = sample
        else:
            alpha = 1.0 - math.exp(-max(now - self._at, 0.0) / self.tau_s)
            # Two samples in the same instant still both count: never weigh a new one at zero.
            alpha = max(alpha, 0.1)
            self._value += alpha * (sample - self._value)
        self._at = now
        return self._value

    @property
    def value(self) -> float | None:
        return self._value


class DecayingCounter:
    """A count of events that fades with ``exp(-age/tau)``: recent failures weigh, old ones vanish."""

    __slots__ = ("_at", "_value", "tau_s")

    def __init__(self, tau_s: float) -> None:
        self.tau_s = tau_s
        self._value = 0.0
        self._at = 0.0

    def value(self, now: float | None = None) -> float:
        if not self._value:
            return 0.0  # the common case, on every routing decision: skip the clock and exp()
        now = time.monotonic() if now is None else now
        return self._value * math.exp(-max(now - self._at, 0.0) / self.tau_s)

    def add(self, amount: float = 1.0, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        self._value = self.value(now) + amount
        self._at = now
        return self._value

    def reset(self) -> None:
        self._value = 0.0


class TokenBucket:
    """``rate_per_s`` tokens a second, holding at most ``burst``; ``take()`` spends one if it can.

    The edge limits events and sessions per key with it; the router bounds failovers across all
    turns with it (a failover storm cannot multiply the load on the regions that are left).
    """

    __slots__ = ("_at", "_tokens", "burst", "rate_per_s", "refused")

    def __init__(self, *, rate_per_s: float, burst: float) -> None:
        self.rate_per_s = rate_per_s
        self.burst = float(burst)
        self._tokens = float(burst)
        self._at = time.monotonic()
        self.refused = 0
        """How many ``take()`` calls found the bucket empty."""

    def available(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return min(self.burst, self._tokens + (now - self._at) * self.rate_per_s)

    def take(self, n: float = 1.0, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        self._tokens = self.available(now)
        self._at = now
        if self._tokens >= n:
            self._tokens -= n
            return True
        self.refused += 1
        return False

    def give_back(self, n: float = 1.0) -> None:
        """Undo a ``take(n)`` whose work was not done after all."""
        self._tokens = min(self.burst, self._tokens + n)
