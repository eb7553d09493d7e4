"""A bounded trail of records per key in Redis (the audit trail): one list per key
(``<prefix><key_id>``), ``LPUSH`` + ``LTRIM`` to ``cap`` records, expiring ``ttl_s`` after the key's
last record. While Redis fails, records are held in (and read from) this edge's memory, so an
outage loses no record this edge wrote; ``share_held`` pushes them once Redis answers again."""

from __future__ import annotations

from typing import Generic

import msgspec

from edge.stores.base import S
from edge.stores.memory import MemoryTrail
from wire.bounded_redis import BoundedRedis

_encoder = msgspec.json.Encoder()


class RedisTrail(Generic[S]):
    def __init__(
        self, redis: BoundedRedis, *, record_type: type[S], prefix: str, cap: int, ttl_s: int
    ) -> None:
        self._redis = redis
        self._prefix = prefix
        self._cap = cap
        self._ttl_s = ttl_s
        self._decoder = msgspec.json.Decoder(record_type)
        self._held = MemoryTrail[S](cap)
        """Records written while Redis failed, until ``share_held`` pushes them."""

    def _key(self, key_id: str) -> str:
        return f"{self._prefix}{key_id}"

    async def append(self, record: S) -> None:
        if not await self._push([record]):
            await self._held.append(record)

    async def share_held(self) -> bool:
        held = self._held.take_all()
        if held and not await self._push(held):
            for record in held:  # oldest first, so the newest stays first
                await self._held.append(record)
            return False
        return True

    async def _push(self, records: list[S]) -> bool:
        """Push ``records`` (oldest first) in one transaction: each list stays at most ``cap`` long."""

        async def push() -> object:
            pipe = self._redis.client.pipeline(transaction=True)
            for record in records:
                key = self._key(record.key_id)
                pipe.lpush(key, _encoder.encode(record))
                pipe.ltrim(key, 0, self._cap - 1)
                pipe.expire(key, self._ttl_s)
            return await pipe.execute()

        ok, _ = await self._redis.attempt(push)
        return ok

    async def recent(self, key_id: str, limit: int) -> list[S]:
        ok, raw = await self._redis.attempt(
            lambda: self._redis.client.lrange(self._key(key_id), 0, limit - 1)
        )
        shared = [self._decoder.decode(r) for r in raw or ()] if ok else []
        # Written here while Redis was out, not shared yet: newest first among the shared ones.
        local = await self._held.recent(key_id, limit)
        return sorted([*shared, *local], key=lambda r: r.at, reverse=True)[:limit]


__all__ = ["RedisTrail"]
