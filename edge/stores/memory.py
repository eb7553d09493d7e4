"""Every kind of edge state in this process only: one edge without Redis, or (``LocalStore``,
``MemoryTrail``, ``MemoryCounters``) what a Redis backend holds on this edge while Redis fails."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Generic

from litestar.stores.memory import MemoryStore

from edge.stores.base import EdgeStore, R, S


class LocalStore(MemoryStore, EdgeStore):
    """Sessions, client secrets and the speech cache of this process."""

    async def take(self, key: str) -> bytes | None:
        async with self._lock:
            obj = self._store.pop(key, None)
        return None if obj is None or obj.expired else obj.data

    def keys(self) -> list[str]:
        return list(self._store)

    def status(self) -> dict[str, object]:
        return {"backend": "memory", "reachable": True}


class MemoryRecords(Generic[R]):
    """Records made on this edge are known on this edge."""

    def __init__(self) -> None:
        self._records: dict[str, R] = {}
        self._index: dict[str, str] = {}

    async def save(self, record_id: str, record: R, *, index: Iterable[str] = (),
                   unindex: Iterable[str] = ()) -> None:  # fmt: skip
        self._records[record_id] = record
        for indexed in unindex:
            self._index.pop(indexed, None)
        self._index.update(dict.fromkeys(index, record_id))

    async def get(self, record_id: str) -> R | None:
        return self._records.get(record_id)

    async def get_many(self, record_ids: Iterable[str]) -> dict[str, R]:
        return {i: r for i in record_ids if (r := self._records.get(i)) is not None}

    async def find(self, indexed: str) -> R | None:
        record_id = self._index.get(indexed)
        return None if record_id is None else self._records.get(record_id)

    async def delete(self, record_id: str) -> None:
        self._records.pop(record_id, None)
        self._index = {k: v for k, v in self._index.items() if v != record_id}

    async def all(self) -> list[R]:
        return list(self._records.values())

    def status(self) -> dict[str, object]:
        return {"backend": "memory", "reachable": True}

    async def aclose(self) -> None:
        pass


class MemoryTrail(Generic[S]):
    """The last ``cap`` records per key."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._by_key: dict[str, deque[S]] = {}

    async def append(self, record: S) -> None:
        self._by_key.setdefault(record.key_id, deque(maxlen=self._cap)).appendleft(record)

    async def recent(self, key_id: str, limit: int) -> list[S]:
        return list(self._by_key.get(key_id, ()))[:limit]

    async def share_held(self) -> bool:
        return True  # nothing is shared: this edge's memory is the whole trail

    def take_all(self) -> list[S]:
        """Every record, oldest first, removed from here."""
        records = sorted((r for kept in self._by_key.values() for r in kept), key=lambda r: r.at)
        self._by_key.clear()
        return records


class MemoryCounters:
    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, float]] = {}

    async def add(self, key_id: str, amounts: Mapping[str, float]) -> None:
        self.merge({key_id: amounts})

    async def totals(self, key_id: str) -> dict[str, float]:
        return dict(self._by_key.get(key_id, {}))

    async def share_held(self) -> bool:
        return True

    def merge(self, by_key: Mapping[str, Mapping[str, float]]) -> None:
        for key_id, amounts in by_key.items():
            totals = self._by_key.setdefault(key_id, {})
            for name, value in amounts.items():
                totals[name] = totals.get(name, 0.0) + value

    def take_all(self) -> dict[str, dict[str, float]]:
        """Every key's totals, removed from here."""
        by_key, self._by_key = self._by_key, {}
        return by_key


__all__ = ["LocalStore", "MemoryCounters", "MemoryRecords", "MemoryTrail"]
