"""Breaker state in Redis: every edge replica sees one breaker per region, and an outage of Redis
costs none of them their breakers.

pybreaker's own ``CircuitRedisStorage`` answers every Redis error with its fallback state
("closed") and a zero fail counter, and its constructor raises when Redis is down: during an outage
no breaker could trip, and one that was open would close. So each region's state here lives in this
process *and*, while Redis answers, in Redis (same keys as pybreaker's storage): reads take Redis's
value and keep it locally; writes go to both. When a call fails (every call is bounded by the
process's ``wire.bounded_redis`` client, shared with the edge's stores when they run in one process),
Redis is left alone for ``retry_s`` and the local state decides alone. When Redis answers again, a
breaker this process opened meanwhile is written back unless Redis already holds it open; otherwise
Redis's state is taken: shared state resumes.

The synchronous redis-py client is used (pybreaker's storage interface is synchronous), so
``blocking`` is set and the router calls it from a worker thread. ``opened_at`` has one-second
resolution in Redis: the reset timeout is honoured to within a second.
"""

from __future__ import annotations

import calendar
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import pybreaker
import redis as redis_sync

from router.breaker_storage.base import BreakerStorage
from wire.bounded_redis import BoundedRedis, Outage, RedisUnavailable
from wire.redact import redact_url

log = logging.getLogger(__name__)

T = TypeVar("T")

_FAILS, _SUCCESSES = "fail_counter", "success_counter"  # pybreaker's key names


def _epoch(when: datetime) -> int:
    # As pybreaker stores it: whole seconds, a naive time taken as UTC.
    return calendar.timegm(when.utctimetuple())


class RedisLink:
    """Every region's state through the process's Redis (``wire.bounded_redis``), and whether Redis
    is answering."""

    def __init__(self, redis: BoundedRedis, *, retry_s: float, owned: bool) -> None:
        self.redis = redis
        self.url = redis.url
        self._owned = owned
        self._lock = threading.RLock()
        self._outage = Outage(retry_s)
        self.on_recover: list[Callable[[redis_sync.Redis[bytes]], None]] = []
        """Called (with the client, under the lock) when Redis answers again, before anything else."""

    @property
    def reachable(self) -> bool:
        return not self._outage.down

    @property
    def down_since(self) -> float | None:
        """Wall-clock time Redis stopped answering; ``None`` while it answers."""
        return self._outage.since

    @property
    def last_error(self) -> str:
        return self._outage.last_error

    def call(self, fn: Callable[[redis_sync.Redis[bytes]], T]) -> tuple[bool, T | None]:
        """``(True, fn(client))``, or ``(False, None)`` at once while Redis is down or if it fails."""
        with self._lock:
            try:
                if self._outage.down:
                    if self._outage.resting():
                        return False, None
                    self.redis.call_sync(self._resync)
                    self._outage.answered()
                    log.warning("redis %s is back: breaker state shared again", redact_url(self.url))
                return True, self.redis.call_sync(fn)
            except RedisUnavailable as exc:
                if self._outage.failed(exc.reason):
                    log.warning("redis %s unreachable (%s): breakers decide in this process until it is back",
                                redact_url(self.url), exc.reason)  # fmt: skip
                return False, None

    def _resync(self, client: redis_sync.Redis[bytes]) -> None:
        client.ping()
        for resync in self.on_recover:
            resync(client)

    def close(self) -> None:
        if self._owned:  # else the process's owner of the client closes it
            self.redis.close_sync()


class FallbackRedisCircuitStorage(pybreaker.CircuitBreakerStorage):
    """One region's breaker state: Redis while it answers, this process's copy when it does not."""

    def __init__(self, link: RedisLink, namespace: str) -> None:
        super().__init__("redis")
        self._link = link
        self._ns = namespace
        self._state: str = pybreaker.STATE_CLOSED
        self._counts = {_FAILS: 0, _SUCCESSES: 0}
        self._opened: datetime | None = None
        link.on_recover.append(self._resync)

    def _key(self, name: str) -> str:
        return f"{self._ns}:{pybreaker.CircuitRedisStorage.BASE_NAMESPACE}:{name}"

    def _get(self, name: str) -> bytes | None:
        ok, raw = self._link.call(lambda c: c.get(self._key(name)))
        return raw if ok and isinstance(raw, bytes) else None

    def _resync(self, client: redis_sync.Redis[bytes]) -> None:
        shared = client.get(self._key("state"))
        if self._state != pybreaker.STATE_OPEN or shared == pybreaker.STATE_OPEN.encode():
            return  # Redis's state is taken on the next read
        pipe = client.pipeline()
        pipe.set(self._key("state"), self._state)
        pipe.set(self._key(_FAILS), self._counts[_FAILS])
        if self._opened is not None:
            pipe.set(self._key("opened_at"), _epoch(self._opened))
        pipe.execute()

    @property
    def state(self) -> str:
        ok, raw = self._link.call(lambda c: c.get(self._key("state")))
        if ok:
            if isinstance(raw, bytes):
                self._state = raw.decode()
            else:  # new or expired in Redis: this process's state becomes the shared one
                self._link.call(lambda c: c.setnx(self._key("state"), self._state))
        return self._state

    @state.setter
    def state(self, state: str) -> None:
        self._state = str(state)
        self._link.call(lambda c: c.set(self._key("state"), self._state))

    # The two counters, each a local count mirrored in Redis.
    def _incr(self, name: str) -> None:
        self._counts[name] += 1
        ok, value = self._link.call(lambda c: c.incr(self._key(name)))
        if ok and isinstance(value, int):
            self._counts[name] = value

    def _reset(self, name: str) -> None:
        self._counts[name] = 0
        self._link.call(lambda c: c.set(self._key(name), 0))

    def _count(self, name: str) -> int:
        raw = self._get(name)
        if raw is not None:
            self._counts[name] = int(raw)
        return self._counts[name]

    def increment_counter(self) -> None:
        self._incr(_FAILS)

    def reset_counter(self) -> None:
        self._reset(_FAILS)

    def increment_success_counter(self) -> None:
        self._incr(_SUCCESSES)

    def reset_success_counter(self) -> None:
        self._reset(_SUCCESSES)

    @property
    def counter(self) -> int:
        return self._count(_FAILS)

    @property
    def success_counter(self) -> int:
        return self._count(_SUCCESSES)

    @property
    def opened_at(self) -> datetime | None:
        raw = self._get("opened_at")
        if raw is not None:
            self._opened = datetime.fromtimestamp(int(raw), UTC)
        return self._opened

    @opened_at.setter
    def opened_at(self, now: datetime) -> None:
        self._opened = now
        self._link.call(lambda c: c.set(self._key("opened_at"), _epoch(now)))


class RedisBreakerStorage(BreakerStorage):
    blocking = True

    def __init__(
        self, redis: str | BoundedRedis, *, namespace: str = "voicemesh", timeout_s: float = 0.5,
        retry_s: float = 2.0,
    ) -> None:  # fmt: skip
        """``redis``: the process's client (its owner closes it), or a URL to open one of its own."""
        self._namespace = namespace
        # Short timeouts and no retries: a slow or dead Redis must not stall routing.
        owned = isinstance(redis, str)
        client = BoundedRedis(redis, timeout_s=timeout_s) if isinstance(redis, str) else redis
        self.link = RedisLink(client, retry_s=retry_s, owned=owned)
        self._states: dict[str, FallbackRedisCircuitStorage] = {}

    def for_region(self, region_id: str) -> pybreaker.CircuitBreakerStorage:
        if region_id not in self._states:
            self._states[region_id] = FallbackRedisCircuitStorage(
                self.link, f"{self._namespace}:breaker:{region_id}"
            )
        return self._states[region_id]

    def describe(self) -> str:
        where = f"redis ({redact_url(self.link.url)})"
        if self.link.reachable or self.link.down_since is None:
            return where
        since = datetime.fromtimestamp(self.link.down_since, UTC).isoformat(timespec="seconds")
        return f"{where} unreachable since {since} ({self.link.last_error}): breakers kept in this process"

    def close(self) -> None:
        self.link.close()
