"""Totals per key in Redis (usage): one hash per key (``<prefix><key_id>``), ``HINCRBYFLOAT``: every
edge adds to it atomically; no expiry. While Redis fails, this edge counts in memory, adds that in
when read, and adds it to the shared hash once Redis answers (``share_held``)."""

from __future__ import annotations

from collections.abc import Mapping

from edge.stores.memory import MemoryCounters
from wire.bounded_redis import BoundedRedis


class RedisCounters:
    def __init__(self, redis: BoundedRedis, *, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix
        self._held = MemoryCounters()
        """Counted while Redis failed, until ``share_held`` adds it to the shared hashes."""

    def _key(self, key_id: str) -> str:
        return f"{self._prefix}{key_id}"

    async def add(self, key_id: str, amounts: Mapping[str, float]) -> None:
        if not await self._incr({key_id: amounts}):
            await self._held.add(key_id, amounts)

    async def share_held(self) -> bool:
        held = self._held.take_all()
        if held and not await self._incr(held):
            self._held.merge(held)
            return False
        return True

    async def _incr(self, by_key: Mapping[str, Mapping[str, float]]) -> bool:
        async def incr() -> object:
            pipe = self._redis.client.pipeline(transaction=True)  # all of it or none
            for key_id, amounts in by_key.items():
                for name, value in amounts.items():
                    pipe.hincrbyfloat(self._key(key_id), name, value)
            return await pipe.execute()

        ok, _ = await self._redis.attempt(incr)
        return ok

    async def totals(self, key_id: str) -> dict[str, float]:
        ok, raw = await self._redis.attempt(lambda: self._redis.client.hgetall(self._key(key_id)))
        totals = {k.decode(): float(v) for k, v in (raw or {}).items()} if ok else {}
        for name, value in (await self._held.totals(key_id)).items():
            totals[name] = totals.get(name, 0.0) + value
        return totals


__all__ = ["RedisCounters"]
