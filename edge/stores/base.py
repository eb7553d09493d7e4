"""What the edge keeps beyond a request, as interfaces: one per kind of state, each with a memory
backend (``edge/stores/memory.py``: one edge) and a Redis one (``edge/stores/redis/``: every edge
sharing one Redis), as Litestar's ``stores`` package is laid out.

The stores know storage, not the domain: they keep msgspec records (``Records``, ``Trail``) or
numbers (``Counters``) that the domain packages define (a key in ``edge.tenancy``, a custom voice
in ``edge.speech``) and hand in with their type. What a backend does while Redis fails is part of
its kind's contract, written on each interface below.

==================  ===================================  ========================================
kind                interface                            while Redis fails
==================  ===================================  ========================================
sessions, secrets,  ``EdgeStore`` (a Litestar ``Store``)  kept on this edge, copied back after
speech cache
keys, voices        ``Records``                          ``unavailable()`` raised (a 503): a
                                                         local copy would differ between edges
audit               ``Trail``                            held on this edge, shared once back
usage               ``Counters``                         held on this edge, added once back
limits              ``redis.limits.RedisLimits``          counted per edge (``edge.shared.limits``)
batches             ``redis.batches.BatchStore``          503 (no batches without Redis)
==================  ===================================  ========================================
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import Protocol, TypeVar

from litestar.stores.base import Store

R = TypeVar("R")
S = TypeVar("S", bound="Stamped")


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


class Records(Protocol[R]):
    """Records by id, listable, with an optional index (a secret's hash -> the record's id)."""

    async def save(self, record_id: str, record: R, *, index: Iterable[str] = (),
                   unindex: Iterable[str] = ()) -> None:  # fmt: skip
        """Write the record; point ``index`` at it and drop ``unindex``, all in one step."""

    async def get(self, record_id: str) -> R | None: ...

    async def get_many(self, record_ids: Iterable[str]) -> dict[str, R]:
        """The records of those ids that exist (one round trip)."""

    async def find(self, indexed: str) -> R | None:
        """The record ``indexed`` points at."""

    async def delete(self, record_id: str) -> None: ...

    async def all(self) -> list[R]: ...

    def status(self) -> dict[str, object]: ...

    async def aclose(self) -> None: ...


class Stamped(Protocol):
    """A record of a ``Trail``: whose it is, and when (ISO 8601, so that text order is time order)."""

    @property
    def key_id(self) -> str: ...

    @property
    def at(self) -> str: ...


class Trail(Protocol[S]):
    """The newest records of each key, bounded."""

    async def append(self, record: S) -> None: ...

    async def recent(self, key_id: str, limit: int) -> list[S]:
        """The key's latest ``limit`` records, newest first."""
        ...

    async def share_held(self) -> bool:
        """Push records held on this edge while the shared store failed; True once none is held."""
        ...


class Counters(Protocol):
    """Named totals per key, only ever added to."""

    async def add(self, key_id: str, amounts: Mapping[str, float]) -> None: ...

    async def totals(self, key_id: str) -> dict[str, float]:
        """The key's totals (a name never added to is absent)."""
        ...

    async def share_held(self) -> bool:
        """Add what was counted on this edge while the shared store failed; True once none is held."""
        ...


__all__ = ["Counters", "EdgeStore", "Records", "Stamped", "Trail"]
