"""One Redis client per process whose calls never stall their caller: the one place that connects
to Redis, bounds each call in time, and says what counts as Redis failing.

Every store of the edge and the router's breaker state share one ``BoundedRedis`` (built by the
edge's composition root, ``edge/app/services.py``; the router also builds its own when run alone).
Its connections have a connect and a read timeout, and redis-py retries only a dropped connection,
once, at once: a pooled connection that a restarted Redis closed fails its next command, and that is
not Redis being down (taken as an outage, it sent the edges' session snapshots to local memory for
``retry_s``, where an edge killed next lost them: the chaos drill). A dead Redis still costs a call at
most ``timeout_s`` per socket step (a refused reconnect fails at once), and ``call`` bounds the whole
call besides. A failure
is classified once, here: ``FAILURES`` (a redis-py error, a socket error, a timeout) becomes
``RedisUnavailable``; anything else is a bug and propagates.

A redis-py connection pool has one set of timeouts, and an async pool cannot serve a worker
thread, so the client holds up to three pools: ``client`` (async, ``timeout_s``: every small read
and write), ``bulk`` (async, ``bulk_timeout_s``: a batch item's audio, megabytes in one call) and
``sync`` (the router's breakers: pybreaker's storage interface is synchronous and runs in worker
threads). Each is made on first use.

What a caller does while Redis is down is its own choice (a local copy, a 503, counting per edge);
``Outage`` is the small gate the ones that keep a local copy share: after a failure, leave Redis
alone for ``retry_s``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.retry import Retry

from wire.redact import redact_url

log = logging.getLogger("voicemesh.redis")

T = TypeVar("T")

FAILURES: tuple[type[BaseException], ...] = (RedisError, OSError, TimeoutError)
"""What counts as "Redis did not answer": retrying later may help. Anything else is a bug."""


class RedisUnavailable(Exception):
    """Redis did not answer within its bound, or refused: ``reason`` is the failure's type name
    (redis-py's own text may carry the host and is not repeated)."""

    def __init__(self, url: str, cause: BaseException) -> None:
        self.reason = type(cause).__name__
        super().__init__(f"redis {redact_url(url)} unreachable ({self.reason})")


class Outage:
    """After a failure, Redis is left alone for ``retry_s`` (calls go to the caller's local copy at
    once). Not locked: a thread-shared user holds its own lock around it."""

    def __init__(self, retry_s: float = 2.0) -> None:
        self.retry_s = retry_s
        self._until: float | None = None
        self.since: float | None = None
        """Wall-clock time Redis stopped answering; ``None`` while it answers."""
        self.last_error = ""

    @property
    def down(self) -> bool:
        return self._until is not None

    def resting(self) -> bool:
        """Whether Redis is down and not to be tried yet."""
        return self._until is not None and time.monotonic() < self._until

    def failed(self, reason: str) -> bool:
        """Note a failure; ``True`` when Redis was answering until now."""
        was_up = self._until is None
        if was_up:
            self.since = time.time()
        self.last_error = reason
        self._until = time.monotonic() + self.retry_s
        return was_up

    def answered(self) -> bool:
        """Note an answer; ``True`` when Redis was down until now."""
        was_down = self._until is not None
        self._until = self.since = None
        self.last_error = ""
        return was_down


class BoundedRedis:
    """The process's Redis: connect and read bounded, a dropped connection retried once, one notion
    of failure."""

    def __init__(self, url: str, *, timeout_s: float = 0.5, bulk_timeout_s: float = 5.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.bulk_timeout_s = max(bulk_timeout_s, timeout_s)
        self._client: aioredis.Redis[bytes] | None = None
        self._bulk: aioredis.Redis[bytes] | None = None
        self._sync: redis.Redis[bytes] | None = None
        self._sync_lock = threading.Lock()
        self.last_error = ""
        """The last call's failure (type name), ``""`` once a call succeeds."""

    def _async(self, timeout_s: float) -> aioredis.Redis[bytes]:
        return aioredis.Redis.from_url(
            self.url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
            retry=AsyncRetry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )  # fmt: skip

    @property
    def client(self) -> aioredis.Redis[bytes]:
        """The async client for every small read and write."""
        if self._client is None:
            self._client = self._async(self.timeout_s)
        return self._client

    @property
    def bulk(self) -> aioredis.Redis[bytes]:
        """The async client for large values (a longer bound)."""
        if self._bulk is None:
            self._bulk = self._async(self.bulk_timeout_s)
        return self._bulk

    @property
    def sync(self) -> redis.Redis[bytes]:
        """A synchronous client (thread-safe pool) for callers in worker threads."""
        with self._sync_lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(
                    self.url, socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s,
                    retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
                )  # fmt: skip
            return self._sync

    def _failed(self, exc: BaseException) -> RedisUnavailable:
        error = RedisUnavailable(self.url, exc)
        if not self.last_error:
            log.warning("%s", error)
        self.last_error = error.reason
        return error

    def _answered(self) -> None:
        if self.last_error:
            log.info("redis %s answers again", redact_url(self.url))
            self.last_error = ""

    async def call(self, op: Callable[[], Awaitable[T]], *, bulk: bool = False) -> T:
        """``await op()``, bounded as a whole (the socket timeouts bound each step);
        ``RedisUnavailable`` when Redis failed."""
        timeout = self.bulk_timeout_s if bulk else self.timeout_s
        try:
            async with asyncio.timeout(2 * timeout + 0.1):
                result = await op()
        except FAILURES as exc:
            raise self._failed(exc) from exc
        self._answered()
        return result

    async def attempt(self, op: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """``(True, result)``, or ``(False, None)`` when Redis failed (for callers with a local copy)."""
        try:
            return True, await self.call(op)
        except RedisUnavailable:
            return False, None

    def call_sync(self, fn: Callable[[redis.Redis[bytes]], T]) -> T:
        """``fn(sync client)`` in this thread; ``RedisUnavailable`` when Redis failed."""
        try:
            result = fn(self.sync)
        except FAILURES as exc:
            raise self._failed(exc) from exc
        self._answered()
        return result

    def status(self) -> dict[str, object]:
        return {"backend": "redis", "url": redact_url(self.url), "error": self.last_error}

    async def aclose(self) -> None:
        """Close every pool (a later call opens them again)."""
        clients, self._client, self._bulk = (self._client, self._bulk), None, None
        for client in clients:
            if client is not None:
                await client.aclose()  # type: ignore[attr-defined]  # types-redis 4.6 predates aclose
        self.close_sync()

    def close_sync(self) -> None:
        """Close the synchronous pool (from any thread)."""
        with self._sync_lock:
            if self._sync is not None:
                self._sync.close()
                self._sync = None


__all__ = ["FAILURES", "BoundedRedis", "Outage", "RedisUnavailable"]
