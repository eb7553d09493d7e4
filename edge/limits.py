"""Per-key admission: concurrent-session caps and token-bucket rate limits with a burst allowance."""

from __future__ import annotations

from collections import defaultdict

from edge.settings import LimitSettings
from wire.errors import ProtocolError
from wire.rates import TokenBucket


class RateLimited(ProtocolError):
    code = "rate_limit_exceeded"


class TooManySessions(ProtocolError):
    code = "session_limit_exceeded"


class KeyLimits:
    """Admission per API key (or JWT subject, or the key a client secret was minted from)."""

    def __init__(self, limits: LimitSettings) -> None:
        self._limits = limits
        self._active: dict[str, int] = defaultdict(int)
        self._buckets: dict[str, TokenBucket] = {}

    def check_rate(self, key_id: str) -> None:
        bucket = self._buckets.get(key_id)
        if bucket is None:
            bucket = self._buckets[key_id] = TokenBucket(
                rate_per_s=self._limits.connect_rate_per_s, burst=self._limits.connect_burst
            )
        if not bucket.take():
            raise RateLimited(f"too many requests for this key; retry in {1 / bucket.rate_per_s:.1f} s")

    def active(self, key_id: str) -> int:
        return self._active.get(key_id, 0)

    def acquire(self, key_id: str) -> None:
        """Take one of the key's session slots (``release`` gives it back)."""
        if self._active[key_id] >= self._limits.max_sessions_per_key:
            raise TooManySessions(
                f"this key already has {self._active[key_id]} open sessions "
                f"(limit {self._limits.max_sessions_per_key}): close one first"
            )
        self._active[key_id] += 1

    def release(self, key_id: str) -> None:
        self._active[key_id] -= 1
        if self._active[key_id] <= 0:
            del self._active[key_id]
