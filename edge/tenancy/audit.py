"""The audit trail: one record per turn of a key, newest first, bounded, readable by an admin on any
edge (``GET /v1/keys/{key_id}/audit``).

A record says when, which key, session, response and turn, the residency it was served in, every
region that served it (in order), each failover (``from`` -> ``to``, and why: a ``wire.errors``
code), and the outcome: ``completed``, ``degraded`` (the edge's own voice), ``failed`` or
``cancelled``, with its reason. ``TurnTrail`` builds it from the router's stream as the turn runs.

Records are kept in a ``Trail`` of the edge's stores (``edge/stores/``): this edge's memory, or a
list per key in Redis, bounded to ``cap`` records. Redis is never on a turn's path for long: calls
are bounded, and while Redis fails records are held in (and read from) this edge's memory, so an
outage loses no record this edge wrote; once Redis answers again ``share_held`` pushes them, and
every edge reads them (``edge/tenancy/accounting.py`` retries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import msgspec

from edge.stores.base import Trail
from edge.stores.memory import MemoryTrail
from edge.stores.redis.trail import RedisTrail
from router.api import ClientRefused, Degraded
from wire.bounded_redis import BoundedRedis

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


AuditLog = Trail[AuditRecord]
"""Where records are kept: ``MemoryTrail`` (one edge) or ``RedisTrail`` (every edge), ``edge/stores/``."""


def open_audit_log(redis: BoundedRedis | None, *, cap: int, ttl_s: int) -> AuditLog:
    """No Redis: this edge's last ``cap`` records per key; else a list per key in Redis
    (``voicemesh-audit:<key_id>``), expiring ``ttl_s`` after the key's last turn."""
    if redis is None:
        return MemoryTrail[AuditRecord](cap)
    return RedisTrail(redis, record_type=AuditRecord, prefix="voicemesh-audit:", cap=cap, ttl_s=ttl_s)


__all__ = [
    "EDGE",
    "NOWHERE",
    "AuditLog",
    "AuditRecord",
    "Hop",
    "TurnTrail",
    "now",
    "open_audit_log",
]
