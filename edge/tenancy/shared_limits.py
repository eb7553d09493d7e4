"""Per-key limits counted across every edge together: a key's connect bucket and its session cap
live in Redis, so ``burst`` connects spread over any number of edges pass and the next one on any
edge is refused, and likewise ``max_sessions`` open sessions.

Each check is one Lua script (atomic in Redis, timed by Redis's own clock so edges' clocks do not
matter):

* the rate bucket is a hash ``{tokens, at}`` refilled at the key's rate up to its burst;
* the session cap is a sorted set of leases scored by their expiry: expired ones are dropped before
  counting, and each edge renews its sessions' leases every third of ``session_lease_s``. An edge
  that crashes stops renewing, and its sessions' slots come free by themselves.

When Redis does not answer (bounded by the edge's Redis timeout), the edge counts on its own
(``edge/shared/limits.py`` ``KeyLimits``, per edge) until ``retry_s`` has passed, and ``/status`` says so
(``limits.shared: false``). The per-edge cap (``LimitSettings.max_sessions``) is always this
edge's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from edge.shared.key_policy import KeyPolicy
from edge.shared.limits import KeyLimits, rate_limited, rate_of, session_cap_of, too_many_sessions
from edge.shared.settings import LimitSettings

log = logging.getLogger("voicemesh.edge.limits")

T = TypeVar("T")
NAMESPACE = "voicemesh-limits"

# KEYS[1] bucket; ARGV rate, burst, take (1, or 0 to read). Returns {taken, tokens left (string)}.
_BUCKET = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate, burst, take = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(b[1]), tonumber(b[2])
if tokens == nil or at == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local taken = 0
if take > 0 then
  if tokens >= take then tokens = tokens - take; taken = 1 end
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
end
return {taken, tostring(tokens)}
"""

# KEYS[1] leases; ARGV cap, lease, ttl_s. Returns {taken, leases held after}.
_LEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[1]) then return {0, held} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl * 1000) + 1000)
return {1, held + 1}
"""

# KEYS leases sets; ARGV[1] ttl_s, ARGV[1 + i] the lease in KEYS[i]. A lease that expired while Redis
# was away is written again: its session is open, so it counts.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local ttl = tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, now + ttl, ARGV[i + 1])
  redis.call('PEXPIRE', key, math.ceil(ttl * 1000) + 1000)
end
return #KEYS
"""


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
        self, limits: LimitSettings, client: aioredis.Redis[bytes] | None = None, *, lease_s: float = 30.0,
        timeout_s: float = 0.5, retry_s: float = 2.0,
    ) -> None:  # fmt: skip
        self._limits = limits
        self.local = KeyLimits(limits)
        self._client = client
        self._lease_s = lease_s
        self._timeout_s = timeout_s
        self._retry_s = retry_s
        self._down_until: float | None = None
        self.last_error = ""
        self._leases: dict[str, str] = {}
        """This edge's shared leases: lease -> key id (renewed by ``_renew``)."""
        self._renewer: asyncio.Task[None] | None = None
        if client is not None:
            self._bucket = client.register_script(_BUCKET)
            self._lease = client.register_script(_LEASE)
            self._renew_script = client.register_script(_RENEW)

    @property
    def shared(self) -> bool:
        """Whether per-key limits are counted across edges right now."""
        return self._client is not None and self._down_until is None

    async def _redis(self, op: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """``(True, result)`` from Redis, or ``(False, None)``: no Redis, or it is down."""
        if self._client is None:
            return False, None
        if self._down_until is not None and time.monotonic() < self._down_until:
            return False, None
        try:
            async with asyncio.timeout(2 * self._timeout_s + 0.1):
                result = await op()
        except (RedisError, OSError, TimeoutError) as exc:
            if self._down_until is None:
                log.warning("redis unreachable (%s): per-key limits counted per edge", type(exc).__name__)
            self.last_error = type(exc).__name__
            self._down_until = time.monotonic() + self._retry_s
            return False, None
        if self._down_until is not None:
            log.warning("redis is back: per-key limits shared by every edge again")
        self._down_until = None
        self.last_error = ""
        return True, result

    def _key(self, kind: str, key_id: str) -> str:
        return f"{NAMESPACE}:{kind}:{key_id}"

    async def _take(self, key_id: str, policy: KeyPolicy, take: int) -> RateState | None:
        rate, burst = rate_of(policy, self._limits)
        ok, result = await self._redis(
            lambda: self._bucket(keys=[self._key("rate", key_id)], args=[rate, burst, take])
        )
        if not ok or not isinstance(result, list):
            return None
        state = _state(float(result[1]), rate, burst)
        if take and not int(result[0]):
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
        shared = self._client is not None and (
            self._down_until is None or time.monotonic() >= self._down_until
        )
        self.local.acquire(key_id, policy, per_key=not shared)
        if not shared:
            return Slot(key_id, None)
        cap, lease = session_cap_of(policy, self._limits), secrets.token_hex(12)
        key = self._key("sessions", key_id)
        ok, result = await self._redis(lambda: self._lease(keys=[key], args=[cap, lease, self._lease_s]))
        if not ok or not isinstance(result, list):
            # Redis went away just now: this edge's own count decides.
            if self.local.active(key_id) > cap:
                self.local.release(key_id)
                raise too_many_sessions(self.local.active(key_id), cap)
            return Slot(key_id, None)
        if not int(result[0]):
            self.local.release(key_id)
            raise too_many_sessions(int(result[1]), cap, " across all edges")
        self._leases[lease] = key_id
        if self._renewer is None or self._renewer.done():
            self._renewer = asyncio.create_task(self._renew(), name="session-lease-renewal")
        return Slot(key_id, lease)

    async def release(self, slot: Slot) -> None:
        self.local.release(slot.key_id)
        lease, client = slot.lease, self._client
        if lease is not None and client is not None and self._leases.pop(lease, None) is not None:
            # Not freed when Redis is down: the lease expires within ``session_lease_s`` anyway.
            key = self._key("sessions", slot.key_id)
            await self._redis(lambda: client.zrem(key, lease))

    async def _renew(self) -> None:
        while self._leases:
            await asyncio.sleep(self._lease_s / 3)
            if self._leases:
                await self._renew_once(list(self._leases.items()))

    async def _renew_once(self, leases: list[tuple[str, str]]) -> None:
        keys = [self._key("sessions", key_id) for _, key_id in leases]
        args: list[Any] = [self._lease_s, *(lease for lease, _ in leases)]
        await self._redis(lambda: self._renew_script(keys=keys, args=args))

    def active(self, key_id: str) -> int:
        """This edge's open sessions of the key."""
        return self.local.active(key_id)

    @property
    def total(self) -> int:
        return self.local.total

    def status(self) -> dict[str, object]:
        """What ``/status`` shows: whether per-key limits are shared right now, and if not why."""
        if self._client is None:
            return {"shared": False, "reason": "no Redis configured: limits are per edge"}
        if self._down_until is not None:
            return {"shared": False, "reason": f"redis unreachable ({self.last_error}): limits are per edge"}
        return {"shared": True}

    async def aclose(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(BaseException):
                await self._renewer
        if self._client is not None:
            await self._client.aclose()  # type: ignore[attr-defined]  # types-redis 4.6 predates aclose


__all__ = ["RateState", "SharedKeyLimits", "Slot"]
