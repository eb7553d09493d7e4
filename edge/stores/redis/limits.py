"""Per-key limits counted in Redis by every edge together: a key's connect bucket and its session
leases. Each check is one Lua script (atomic in Redis, timed by Redis's own clock so edges' clocks
do not matter):

* the rate bucket is a hash ``{tokens, at}`` refilled at the key's rate up to its burst;
* the session cap is a sorted set of leases scored by their expiry: expired ones are dropped before
  counting; a lease not renewed (its edge crashed) comes free by itself.

Every call answers ``None`` when Redis failed, and after a failure Redis is left alone for
``retry_s``: the caller (``edge/tenancy/shared_limits.py``) then counts on this edge alone.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from wire.bounded_redis import BoundedRedis, Outage, RedisUnavailable

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


def _key(kind: str, key_id: str) -> str:
    return f"{NAMESPACE}:{kind}:{key_id}"


class RedisLimits:
    """Every edge's connect buckets and session leases."""

    def __init__(self, redis: BoundedRedis, *, retry_s: float = 2.0) -> None:
        self._redis = redis
        client = redis.client
        self._bucket = client.register_script(_BUCKET)
        self._lease = client.register_script(_LEASE)
        self._renew = client.register_script(_RENEW)
        self.outage = Outage(retry_s)

    def may_try(self) -> bool:
        """Whether a call would go to Redis now (it answers, or its rest is over)."""
        return not self.outage.resting()

    async def _call(self, op: Callable[[], Awaitable[T]]) -> T | None:
        if self.outage.resting():
            return None
        try:
            result = await self._redis.call(op)
        except RedisUnavailable as exc:
            if self.outage.failed(exc.reason):
                log.warning("redis unreachable (%s): per-key limits counted per edge", exc.reason)
            return None
        if self.outage.answered():
            log.warning("redis is back: per-key limits shared by every edge again")
        return result

    async def take(self, key_id: str, rate: float, burst: int, take: int) -> tuple[bool, float] | None:
        """Spend ``take`` tokens (0: only read): whether they were taken, and the tokens left."""
        result = await self._call(lambda: self._bucket(keys=[_key("rate", key_id)], args=[rate, burst, take]))
        return (bool(int(result[0])), float(result[1])) if isinstance(result, list) else None

    async def lease(self, key_id: str, cap: int, lease: str, lease_s: float) -> tuple[bool, int] | None:
        """Hold ``lease`` among the key's at most ``cap``: whether it was, and how many are held."""
        keys = [_key("sessions", key_id)]
        result = await self._call(lambda: self._lease(keys=keys, args=[cap, lease, lease_s]))
        return (bool(int(result[0])), int(result[1])) if isinstance(result, list) else None

    async def renew(self, leases: list[tuple[str, str]], lease_s: float) -> None:
        """Renew each ``(lease, key_id)`` for ``lease_s`` more."""
        keys = [_key("sessions", key_id) for _, key_id in leases]
        args: list[Any] = [lease_s, *(lease for lease, _ in leases)]
        await self._call(lambda: self._renew(keys=keys, args=args))

    async def drop(self, key_id: str, lease: str) -> None:
        await self._call(lambda: self._redis.client.zrem(_key("sessions", key_id), lease))


__all__ = ["RedisLimits"]
