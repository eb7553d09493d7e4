"""Sessions, client secrets and the speech cache in Redis, shared by every edge, with this edge's
memory standing in while Redis fails.

Every call is bounded (``wire.bounded_redis``), and once a call fails Redis is left alone for
``retry_s`` (calls go to a local store at once). What is written during an outage lives in the local
store, valid on this edge only; when Redis answers again those writes (and deletes) are copied to it
and Redis is the truth again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TypeVar

from litestar.stores.redis import RedisStore

from edge.stores.base import EdgeStore
from edge.stores.memory import LocalStore
from wire.bounded_redis import BoundedRedis, Outage, RedisUnavailable
from wire.redact import redact_url

log = logging.getLogger("voicemesh.edge.store")

T = TypeVar("T")
NAMESPACE = "voicemesh-edge"


class RedisFallbackStore(EdgeStore):
    """Redis shared by every edge, bounded in time, with a local store while Redis is unreachable."""

    def __init__(self, redis: BoundedRedis, *, namespace: str = NAMESPACE, retry_s: float = 2.0) -> None:
        self._bounded = redis
        self._client = redis.client
        self._namespace = namespace
        self._redis = RedisStore(self._client, namespace=namespace, handle_client_shutdown=False)
        self._local = LocalStore()
        self._outage = Outage(retry_s)
        self._deleted: set[str] = set()
        """Keys deleted during the outage: deleted from Redis too when it is back."""
        self._resync = asyncio.Lock()

    def _full_key(self, key: str) -> str:
        return f"{self._namespace}:{key}"  # as RedisStore names it

    @property
    def reachable(self) -> bool:
        return not self._outage.down

    @property
    def last_error(self) -> str:
        return self._outage.last_error

    async def _shared(self, op: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        """``(True, result)`` from Redis, or ``(False, None)`` when it is down or just failed."""
        if self._outage.down and (self._outage.resting() or not await self._recover()):
            return False, None
        try:
            return True, await self._bounded.call(op)
        except RedisUnavailable as exc:
            self._mark_down(exc)
            return False, None

    def _mark_down(self, exc: RedisUnavailable) -> None:
        if self._outage.failed(exc.reason):
            log.warning("redis %s unreachable (%s): keeping state in this edge until it is back",
                        redact_url(self._bounded.url), exc.reason)  # fmt: skip

    async def _recover(self) -> bool:
        """Redis may be back: copy what this edge wrote (and deleted) meanwhile, then trust Redis."""
        async with self._resync:
            if not self._outage.down:
                return True
            pipe = self._client.pipeline(transaction=False)  # one round trip, however many keys
            for key in self._local.keys():
                value = await self._local.get(key)
                if value is not None:
                    pipe.set(self._full_key(key), value, ex=await self._local.expires_in(key) or None)
            for key in self._deleted:
                pipe.delete(self._full_key(key))

            async def resync() -> object:
                await self._client.ping()
                return await pipe.execute()

            try:
                await self._bounded.call(resync)
            except RedisUnavailable as exc:
                self._mark_down(exc)
                return False
            await self._local.delete_all()
            self._deleted.clear()
            self._outage.answered()
            log.warning("redis %s is back: shared state resumed", redact_url(self._bounded.url))
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
        pass  # the client is the process's (``wire.bounded_redis``): its owner closes it

    def status(self) -> dict[str, object]:
        return {
            "backend": "redis",
            "url": redact_url(self._bounded.url),
            "reachable": self.reachable,
            "error": self.last_error,
        }


__all__ = ["RedisFallbackStore"]
