"""The edge's key-value store: Litestar's ``Store`` plus an atomic ``take`` and a ``status``.

``LocalStore`` keeps everything in this process. ``RedisFallbackStore`` shares state between edges
through Redis, and never lets Redis stall the edge: every call has a connect and a read timeout and
no retries, and once a call fails Redis is left alone for ``retry_s`` (calls go to a local store at
once). What is written during an outage lives in the local store, valid on this edge only; when
Redis answers again those writes (and deletes) are copied to it and Redis is the truth again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import abstractmethod
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

import redis.asyncio as aioredis
from litestar.stores.base import Store
from litestar.stores.memory import MemoryStore
from litestar.stores.redis import RedisStore
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from wire.redact import redact_url

log = logging.getLogger("voicemesh.edge.store")

T = TypeVar("T")


class EdgeStore(Store):
    """A Litestar ``Store`` that can also take a value atomically and describe itself."""

    @abstractmethod
    async def take(self, key: str) -> bytes | None:
        """Get and delete ``key`` in one step: of two concurrent takers, one gets the value."""

    @abstractmethod
    def status(self) -> dict[str, object]:
        """What ``/status`` shows: the backend, where it is (credentials redacted), reachability."""

    async def aclose(self) -> None:
        """Release connections."""


class LocalStore(MemoryStore, EdgeStore):
    """This process only (one edge, or the fallback of a shared store)."""

    async def take(self, key: str) -> bytes | None:
        async with self._lock:
            obj = self._store.pop(key, None)
        return None if obj is None or obj.expired else obj.data

    def keys(self) -> list[str]:
        return list(self._store)

    def status(self) -> dict[str, object]:
        return {"backend": "memory", "reachable": True}


class RedisFallbackStore(EdgeStore):
    """Redis shared by every edge, bounded in time, with a local store while Redis is unreachable."""

    def __init__(self, url: str, *, namespace: str, timeout_s: float = 0.5, retry_s: float = 2.0) -> None:
        self._url = url
        self._timeout_s = timeout_s
        self._retry_s = retry_s
        self._client = aioredis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
        )
        self._namespace = namespace
        self._redis = RedisStore(self._client, namespace=namespace)
        self._local = LocalStore()
        self._down_until: float | None = None
        """Monotonic time before which Redis is not tried; ``None`` while it answers."""
        self._deleted: set[str] = set()
        """Keys deleted during the outage: deleted from Redis too when it is back."""
        self._resync = asyncio.Lock()
        self.last_error = ""

    def _full_key(self, key: str) -> str:
        return f"{self._namespace}:{key}"  # as RedisStore names it

    @property
    def reachable(self) -> bool:
        return self._down_until is None

    async def _shared(self, op: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """``(True, result)`` from Redis, or ``(False, None)`` when it is down or just failed."""
        if self._down_until is not None:
            if time.monotonic() < self._down_until:
                return False, None
            if not await self._recover():
                return False, None
        try:
            # The client's own timeouts bound each socket step; this bounds the whole call.
            async with asyncio.timeout(2 * self._timeout_s + 0.1):
                return True, await op()
        except (RedisError, OSError, TimeoutError) as exc:
            self._mark_down(exc)
            return False, None

    def _mark_down(self, exc: BaseException) -> None:
        if self._down_until is None:
            log.warning(
                "redis %s unreachable (%s): keeping state in this edge until it is back",
                redact_url(self._url), type(exc).__name__,
            )  # fmt: skip
        self.last_error = type(exc).__name__  # redis-py's messages may carry the host; the URL is shown apart
        self._down_until = time.monotonic() + self._retry_s

    async def _recover(self) -> bool:
        """Redis may be back: copy what this edge wrote (and deleted) meanwhile, then trust Redis."""
        async with self._resync:
            if self._down_until is None:
                return True
            pipe = self._client.pipeline(transaction=False)  # one round trip, however many keys
            for key in self._local.keys():
                value = await self._local.get(key)
                if value is not None:
                    pipe.set(self._full_key(key), value, ex=await self._local.expires_in(key) or None)
            for key in self._deleted:
                pipe.delete(self._full_key(key))
            try:
                async with asyncio.timeout(2 * self._timeout_s + 0.1):
                    await self._client.ping()
                    await pipe.execute()
            except (RedisError, OSError, TimeoutError) as exc:
                self._mark_down(exc)
                return False
            await self._local.delete_all()
            self._deleted.clear()
            self._down_until = None
            self.last_error = ""
            log.warning("redis %s is back: shared state resumed", redact_url(self._url))
            return True

    async def set(self, key: str, value: str | bytes, expires_in: int | timedelta | None = None) -> None:
        ok, _ = await self._shared(lambda: self._redis.set(key, value, expires_in=expires_in))
        if not ok:
            self._deleted.discard(key)
            await self._local.set(key, value, expires_in=expires_in)

    async def get(self, key: str, renew_for: int | timedelta | None = None) -> bytes | None:
        ok, value = await self._shared(lambda: self._redis.get(key, renew_for=renew_for))
        return value if ok else await self._local.get(key, renew_for=renew_for)

    async def take(self, key: str) -> bytes | None:
        # GETDEL is one Redis command: two edges taking the same key cannot both get it.
        ok, value = await self._shared(lambda: self._client.getdel(self._full_key(key)))
        if ok:
            return value if isinstance(value, bytes) else None
        self._deleted.add(key)
        return await self._local.take(key)

    async def delete(self, key: str) -> None:
        ok, _ = await self._shared(lambda: self._redis.delete(key))
        if not ok:
            self._deleted.add(key)
            await self._local.delete(key)

    async def delete_all(self) -> None:
        await self._shared(self._redis.delete_all)
        await self._local.delete_all()

    async def exists(self, key: str) -> bool:
        ok, found = await self._shared(lambda: self._redis.exists(key))
        return bool(found) if ok else await self._local.exists(key)

    async def expires_in(self, key: str) -> int | None:
        ok, ttl = await self._shared(lambda: self._redis.expires_in(key))
        return ttl if ok else await self._local.expires_in(key)

    async def aclose(self) -> None:
        await self._client.aclose()  # type: ignore[attr-defined]  # types-redis 4.6 predates aclose

    def status(self) -> dict[str, object]:
        return {
            "backend": "redis",
            "url": redact_url(self._url),
            "reachable": self.reachable,
            "error": self.last_error,
        }


def open_edge_store(url: str | None, *, timeout_s: float = 0.5) -> EdgeStore:
    """``None`` -> an in-process store; ``redis://...`` -> Redis, bounded, with a local fallback."""
    if url is None:
        return LocalStore()
    return RedisFallbackStore(url, namespace="voicemesh-edge", timeout_s=timeout_s)


__all__ = ["EdgeStore", "LocalStore", "RedisFallbackStore", "open_edge_store"]
