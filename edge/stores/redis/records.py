"""Records (stored keys, custom voices) in Redis, shared by every edge: a hash ``<namespace>:records``
(id -> msgspec JSON) and an index hash ``<namespace>:hashes`` (e.g. a secret's SHA-256 -> id).

Redis is not replaced by a local copy while it is down: a key made or revoked during an outage would
differ between edges. A failed call raises what the kind's ``unavailable`` makes (a 503 the client
may retry), and the domain decides what an edge may still trust meanwhile.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

import msgspec

from edge.stores.base import R
from wire.bounded_redis import BoundedRedis, RedisUnavailable

T = TypeVar("T")

# One round trip for the handshake's lookup: hash -> id -> record.
_FIND = """
local id = redis.call('HGET', KEYS[2], ARGV[1])
if not id then return false end
return redis.call('HGET', KEYS[1], id)
"""


class RedisRecords(Generic[R]):
    """Every edge's records of one kind; a failed call raises ``unavailable()``."""

    def __init__(
        self,
        redis: BoundedRedis,
        *,
        namespace: str,
        record_type: type[R],
        unavailable: Callable[[], Exception],
    ) -> None:
        self._redis = redis
        self._client = redis.client
        self._records = f"{namespace}:records"
        self._index = f"{namespace}:hashes"
        self._find = self._client.register_script(_FIND)
        self._decoder = msgspec.json.Decoder(record_type)
        self._unavailable = unavailable

    def _decode(self, raw: object) -> R | None:
        return self._decoder.decode(raw) if isinstance(raw, bytes) else None

    async def _call(self, op: Callable[[], Awaitable[T]]) -> T:
        try:
            return await self._redis.call(op)
        except RedisUnavailable as exc:
            raise self._unavailable() from exc

    async def save(self, record_id: str, record: R, *, index: Iterable[str] = (),
                   unindex: Iterable[str] = ()) -> None:  # fmt: skip
        live = list(index)
        pipe = self._client.pipeline(transaction=True)  # record and index change together
        pipe.hset(self._records, record_id, msgspec.json.encode(record))
        if stale := [d for d in unindex if d not in live]:
            pipe.hdel(self._index, *stale)
        if live:
            pipe.hset(self._index, mapping=dict.fromkeys(live, record_id))
        await self._call(pipe.execute)

    async def get(self, record_id: str) -> R | None:
        return self._decode(await self._call(lambda: self._client.hget(self._records, record_id)))

    async def get_many(self, record_ids: Iterable[str]) -> dict[str, R]:
        ids = list(record_ids)
        if not ids:
            return {}
        raws = await self._call(lambda: self._client.hmget(self._records, ids))
        return {i: r for i, raw in zip(ids, raws, strict=True) if (r := self._decode(raw)) is not None}

    async def find(self, indexed: str) -> R | None:
        raw = await self._call(lambda: self._find(keys=[self._records, self._index], args=[indexed]))
        return self._decode(raw)

    async def delete(self, record_id: str) -> None:
        await self._call(lambda: self._client.hdel(self._records, record_id))

    async def all(self) -> list[R]:
        raws = await self._call(lambda: self._client.hvals(self._records))
        return [r for raw in raws if (r := self._decode(raw)) is not None]

    def status(self) -> dict[str, object]:
        return self._redis.status()

    async def aclose(self) -> None:
        pass  # the client is the process's: its owner closes it


__all__ = ["RedisRecords"]
