"""Per-key limits counted across every edge together: a key's connect bucket and its session cap
live in Redis, so ``burst`` connects spread over any number of edges pass and the next one on any
edge is refused, and likewise ``max_sessions`` open sessions.

The counting in Redis is ``edge/stores/redis/limits.py`` (one Lua script per check, atomic); here
is what it means for a key. Each edge renews its sessions' leases every third of
``session_lease_s``; an edge that crashes stops renewing, and its sessions' slots come free by
themselves.

When Redis does not answer (bounded by the edge's Redis timeout), the edge counts on its own
(``edge/shared/limits.py`` ``KeyLimits``, per edge) until ``retry_s`` has passed, and ``/status`` says so
(``limits.shared: false``). The per-edge cap (``LimitSettings.max_sessions``) is always this
edge's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import secrets
from dataclasses import dataclass
from typing import Any

from edge.shared.key_policy import KeyPolicy
from edge.shared.limits import KeyLimits, rate_limited, rate_of, session_cap_of, too_many_sessions
from edge.shared.settings import LimitSettings
from edge.stores.redis.limits import RedisLimits


@dataclass(frozen=True, slots=True)
class RateState:
    """A key's connect bucket as ``rate_limits.updated`` reports it (name ``requests``)."""

    limit: int
    remaining: int
    reset_s: float
    """Seconds until the bucket is full again."""

    def as_event_item(self) -> dict[str, Any]:
        return {"name": "requests", "limit": self.limit, "remaining": self.remaining,
                "reset_seconds": round(self.reset_s, 3)}  # fmt: skip


def _state(tokens: float, rate: float, burst: int) -> RateState:
    tokens = max(0.0, min(float(burst), tokens))
    return RateState(limit=burst, remaining=math.floor(tokens), reset_s=(burst - tokens) / rate)


@dataclass(frozen=True, slots=True)
class Slot:
    """One session's place in its key's cap; ``lease`` is its entry in Redis (``None``: counted
    by this edge only, as during a Redis outage)."""

    key_id: str
    lease: str | None


class SharedKeyLimits:
    """Admission per key across edges (Redis), with this edge's ``KeyLimits`` as the fallback and
    for the per-edge cap."""

    def __init__(
        self, limits: LimitSettings, shared: RedisLimits | None = None, *, lease_s: float = 30.0
    ) -> None:
        self._limits = limits
        self.local = KeyLimits(limits)
        self._shared = shared
        self._lease_s = lease_s
        self._leases: dict[str, str] = {}
        """This edge's shared leases: lease -> key id (renewed by ``_renew``)."""
        self._renewer: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """Whether per-key limits are counted across edges right now."""
        return self._shared is not None and not self._shared.outage.down

    async def _take(self, key_id: str, policy: KeyPolicy, take: int) -> RateState | None:
        if self._shared is None:
            return None
        rate, burst = rate_of(policy, self._limits)
        result = await self._shared.take(key_id, rate, burst, take)
        if result is None:
            return None
        taken, tokens = result
        state = _state(tokens, rate, burst)
        if take and not taken:
            raise rate_limited(rate)
        return state

    async def check_rate(self, key_id: str, policy: KeyPolicy) -> RateState:
        """Spend one of the key's connect tokens (``RateLimited`` when there is none)."""
        state = await self._take(key_id, policy, 1)
        if state is not None:
            return state
        self.local.check_rate(key_id, policy)
        return await self.peek_rate(key_id, policy)

    async def peek_rate(self, key_id: str, policy: KeyPolicy) -> RateState:
        """The key's connect bucket now, nothing spent."""
        state = await self._take(key_id, policy, 0)
        if state is not None:
            return state
        bucket = self.local.bucket(key_id, policy)
        return _state(bucket.available(), bucket.rate_per_s, int(bucket.burst))

    async def acquire(self, key_id: str, policy: KeyPolicy) -> Slot:
        """One of the edge's session slots and one of the key's (across edges when Redis answers)."""
        shared = self._shared if self._shared is not None and self._shared.may_try() else None
        self.local.acquire(key_id, policy, per_key=shared is None)
        if shared is None:
            return Slot(key_id, None)
        cap, lease = session_cap_of(policy, self._limits), secrets.token_hex(12)
        result = await shared.lease(key_id, cap, lease, self._lease_s)
        if result is None:
            # Redis went away just now: this edge's own count decides.
            if self.local.active(key_id) > cap:
                self.local.release(key_id)
                raise too_many_sessions(self.local.active(key_id), cap)
            return Slot(key_id, None)
        taken, held = result
        if not taken:
            self.local.release(key_id)
            raise too_many_sessions(held, cap, " across all edges")
        self._leases[lease] = key_id
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew(), name="session-lease-renewal")
        return Slot(key_id, lease)

    async def release(self, slot: Slot) -> None:
        self.local.release(slot.key_id)
        lease, shared = slot.lease, self._shared
        if lease is not None and shared is not None and self._leases.pop(lease, None) is not None:
            # Not freed when Redis is down: the lease expires within ``session_lease_s`` anyway.
            await shared.drop(slot.key_id, lease)

    async def _renew(self) -> None:
        while self._leases:
            await asyncio.sleep(self._lease_s / 3)
            if self._leases:
                await self._renew_once(list(self._leases.items()))

    async def _renew_once(self, leases: list[tuple[str, str]]) -> None:
        if self._shared is not None:
            await self._shared.renew(leases, self._lease_s)

    def active(self, key_id: str) -> int:
        """This edge's open sessions of the key."""
        return self.local.active(key_id)

    @property
    def total(self) -> int:
        return self.local.total

    def status(self) -> dict[str, object]:
        """What ``/status`` shows: whether per-key limits are shared right now, and if not why."""
        if self._shared is None:
            return {"shared": False, "reason": "no Redis configured: limits are per edge"}
        if self._shared.outage.down:
            reason = f"redis unreachable ({self._shared.outage.last_error}): limits are per edge"
            return {"shared": False, "reason": reason}
        return {"shared": True}

    async def aclose(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(BaseException):
                await self._renewer


__all__ = ["RateState", "SharedKeyLimits", "Slot"]
