"""The audit trail: one record per turn of a key, newest first, bounded, readable by an admin on any
edge (``GET /v1/keys/{key_id}/audit``).

A record says when, which key, session, response and turn, the residency it was served in, every
region that served it (in order), each failover (``from`` -> ``to``, and why: a ``wire.errors``
code), and the outcome: ``completed``, ``degraded`` (the edge's own voice), ``failed`` or
``cancelled``, with its reason. ``TurnTrail`` builds it from the router's stream as the turn runs.

Two backends behind ``AuditLog``: ``MemoryAuditLog`` (one edge) and ``RedisAuditLog`` (every edge:
a list per key, ``LPUSH`` + ``LTRIM`` to ``cap`` records, expiring ``ttl_s`` after the key's last
turn). Redis is never on a turn's path for long: calls are bounded, and while Redis fails records are
held in (and read from) this edge's memory, so an outage loses no record this edge wrote; once Redis
answers again ``share_held`` pushes them, and every edge reads them (``edge/tenancy/accounting.py`` retries).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol, TypeVar

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from router.api import ClientRefused, Degraded
from wire.redact import redact_url

log = logging.getLogger("voicemesh.edge.audit")

T = TypeVar("T")

Outcome = Literal["completed", "degraded", "failed", "cancelled"]
EDGE = "edge"
"""A hop's ``to`` when the edge's own voice took the turn over."""
NOWHERE = "none"
"""A hop's ``to`` when the turn ended in an error (``on_no_region: error``)."""


class Hop(msgspec.Struct, frozen=True, kw_only=True):
    """The turn left ``from_region`` for ``to`` (a region, ``edge`` or ``none``) because of ``reason``."""

    from_region: str = msgspec.field(name="from")
    to: str
    reason: str


class AuditRecord(msgspec.Struct, kw_only=True):
    at: str
    """When the turn ended (ISO 8601, UTC)."""
    key_id: str
    session_id: str
    turn_id: str
    response_id: str | None = None
    """``None`` for a transcription turn (no response)."""
    kind: Literal["response", "transcription", "speech"] = "response"
    residency: list[str] | None = None
    regions: list[str] = msgspec.field(default_factory=list)
    failovers: list[Hop] = msgspec.field(default_factory=list)
    outcome: Outcome = "completed"
    reason: str = ""
    """Why it was not ``completed``: the router's degrade reason, the error code, the cancel reason."""
    cache_hit: bool = False
    """A speech request served from the speech cache: no region, no synthesis."""


@dataclass
class TurnTrail:
    """What the router's stream said about one turn: the regions, the failovers, how it ended (kept
    by the turn's reader, ``edge/turns/reader.py``)."""

    regions: list[str] = field(default_factory=list)
    hops: list[Hop] = field(default_factory=list)
    degraded: Degraded | None = None
    refused: ClientRefused | None = None
    audio_out_bytes: int = 0
    """Region audio relayed (24 kHz PCM16)."""

    def failed_over(self, from_region: str, to: str, reason: str) -> None:
        self.hops.append(Hop(from_region=from_region, to=to, reason=reason))

    def left_for(self, to: str) -> None:
        """The degraded turn went to ``to`` (``edge`` or ``none``): its last hop, if a region failed."""
        ev = self.degraded
        if ev is not None:
            hop = Hop(from_region=ev.failed_region or NOWHERE, to=to, reason=ev.failure or ev.reason)
            self.hops.append(hop)

    def outcome(self, status: str, cancel_reason: str | None = None) -> tuple[Outcome, str]:
        """The record's outcome and reason, from the response's final ``status``."""
        if status == "cancelled":
            return "cancelled", cancel_reason or ""
        if status == "failed":
            return "failed", self.refused.code if self.refused is not None else "internal_error"
        if self.degraded is not None:
            return "degraded", self.degraded.reason
        return "completed", ""


def now() -> str:
    return datetime.now(UTC).isoformat()


class AuditLog(Protocol):
    async def append(self, record: AuditRecord) -> None: ...

    async def recent(self, key_id: str, limit: int) -> list[AuditRecord]:
        """The key's latest ``limit`` records, newest first."""
        ...

    async def share_held(self) -> bool:
        """Push records held on this edge while the shared store failed; True once none is held."""
        ...


class MemoryAuditLog:
    """This edge only: the last ``cap`` records per key."""

    def __init__(self, cap: int) -> None:
        self._cap = cap
        self._by_key: dict[str, deque[AuditRecord]] = {}

    async def append(self, record: AuditRecord) -> None:
        self._by_key.setdefault(record.key_id, deque(maxlen=self._cap)).appendleft(record)

    async def recent(self, key_id: str, limit: int) -> list[AuditRecord]:
        return list(self._by_key.get(key_id, ()))[:limit]

    async def share_held(self) -> bool:
        return True  # nothing is shared: this edge's memory is the whole trail

    def take_all(self) -> list[AuditRecord]:
        """Every record, oldest first, removed from here."""
        records = sorted((r for kept in self._by_key.values() for r in kept), key=lambda r: r.at)
        self._by_key.clear()
        return records


class BoundedRedis:
    """A Redis client whose calls never stall the edge (timeouts, no retries); a failed call returns
    ``(False, None)`` so the caller falls back to its memory backend. Shared by the audit trail and
    the usage totals (``edge/tenancy/usage.py``)."""

    def __init__(self, url: str, *, timeout_s: float = 0.5) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.client = aioredis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0)
        )
        self.last_error = ""

    async def call(self, op: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
        try:
            async with asyncio.timeout(2 * self.timeout_s + 0.1):
                result = await op()
        except (RedisError, OSError, TimeoutError) as exc:
            if not self.last_error:
                log.warning("redis %s unreachable (%s): per-key records held on this edge until it answers",
                            redact_url(self.url), type(exc).__name__)  # fmt: skip
            self.last_error = type(exc).__name__
            return False, None
        if self.last_error:
            log.info("redis %s answers again", redact_url(self.url))
        self.last_error = ""
        return True, result

    async def aclose(self) -> None:
        await self.client.aclose()  # type: ignore[attr-defined]  # types-redis 4.6 predates aclose


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AuditRecord)


class RedisAuditLog:
    """Every edge's records in one Redis list per key (``voicemesh-audit:<key_id>``)."""

    def __init__(self, redis: BoundedRedis, *, cap: int, ttl_s: int) -> None:
        self._redis = redis
        self._cap = cap
        self._ttl_s = ttl_s
        self._held = MemoryAuditLog(cap)
        """Records written while Redis failed, until ``share_held`` pushes them."""

    @staticmethod
    def _key(key_id: str) -> str:
        return f"voicemesh-audit:{key_id}"

    async def append(self, record: AuditRecord) -> None:
        if not await self._push([record]):
            await self._held.append(record)

    async def share_held(self) -> bool:
        held = self._held.take_all()
        if held and not await self._push(held):
            for record in held:  # oldest first, so the newest stays first
                await self._held.append(record)
            return False
        return True

    async def _push(self, records: list[AuditRecord]) -> bool:
        """Push ``records`` (oldest first) in one transaction: each list stays at most ``cap`` long."""

        async def push() -> object:
            pipe = self._redis.client.pipeline(transaction=True)
            for record in records:
                key = self._key(record.key_id)
                pipe.lpush(key, _encoder.encode(record))
                pipe.ltrim(key, 0, self._cap - 1)
                pipe.expire(key, self._ttl_s)
            return await pipe.execute()

        ok, _ = await self._redis.call(push)
        return ok

    async def recent(self, key_id: str, limit: int) -> list[AuditRecord]:
        ok, raw = await self._redis.call(lambda: self._redis.client.lrange(self._key(key_id), 0, limit - 1))
        shared = [_decoder.decode(r) for r in raw or ()] if ok else []
        # Written here while Redis was out, not shared yet: newest first among the shared ones.
        local = await self._held.recent(key_id, limit)
        return sorted([*shared, *local], key=lambda r: r.at, reverse=True)[:limit]


__all__ = [
    "EDGE",
    "NOWHERE",
    "AuditLog",
    "AuditRecord",
    "BoundedRedis",
    "Hop",
    "MemoryAuditLog",
    "RedisAuditLog",
    "TurnTrail",
    "now",
]
