"""Where an edge books each finished turn of a key: its audit record (``edge/tenancy/audit.py``) and its
usage (``edge/tenancy/usage.py``), in memory for one edge or in the shared Redis (``EdgeSettings.store_url``).

Booking is best effort and bounded: it never fails or stalls the session that finished the turn,
and runs to its end even when that session closes meanwhile (a client typically hangs up right
after the last ``response.done``): ``book`` runs in a task of its own, awaited by the caller.

A booking Redis could not take (down, or just slow past its bound on a busy machine) is held on this
edge, and a task of its own keeps offering what is held to Redis (waits doubling from
``SHARE_RETRY_S`` to ``SHARE_RETRY_MAX_S``) until it is in: other edges then read it too.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from edge.tenancy.audit import AuditLog, AuditRecord, open_audit_log
from edge.tenancy.usage import UsageDelta, UsageTotals, count, open_usage
from wire.bounded_redis import BoundedRedis

log = logging.getLogger("voicemesh.edge.accounting")

AUDIT_CAP = 1000
"""Audit records kept per key (the newest)."""
AUDIT_TTL_S = 7 * 24 * 3600
"""A key's audit list expires this long after its last turn."""
SHARE_RETRY_S = 0.5
SHARE_RETRY_MAX_S = 30.0


@dataclass
class Accounting:
    audit: AuditLog = field(default_factory=lambda: open_audit_log(None, cap=AUDIT_CAP, ttl_s=AUDIT_TTL_S))
    usage: UsageTotals = field(default_factory=lambda: open_usage(None))
    redis: BoundedRedis | None = None
    """The process's Redis (its owner closes it), ``None`` for this edge's memory."""
    _pending: set[asyncio.Task[None]] = field(default_factory=set, repr=False)
    _sharer: asyncio.Task[None] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, redis: BoundedRedis | None, *, audit_cap: int = AUDIT_CAP) -> Accounting:
        """``None``: this edge's memory; else shared by every edge using that Redis."""
        return cls(open_audit_log(redis, cap=audit_cap, ttl_s=AUDIT_TTL_S), open_usage(redis), redis)

    async def book(self, record: AuditRecord, delta: UsageDelta) -> None:
        """Book one finished turn; a cancelled caller stops waiting, the booking goes on."""
        await asyncio.shield(self.submit(record, delta))

    def submit(self, record: AuditRecord, delta: UsageDelta) -> asyncio.Task[None]:
        """Start booking one finished turn, at once and in a task of its own (kept until done)."""
        task = asyncio.create_task(self._book(record, delta), name=f"book-{record.turn_id}")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        return task

    async def _book(self, record: AuditRecord, delta: UsageDelta) -> None:
        count(record.key_id, record.outcome, delta)
        try:
            await self.audit.append(record)
            await self.usage.add(record.key_id, delta)
        except Exception:  # a bookkeeping bug must not cost the session its turn
            log.exception("turn %s of key %s: booking failed", record.turn_id, record.key_id)
        if self.redis is not None and (self._sharer is None or self._sharer.done()):
            # Free when nothing is held (no Redis call); else it retries until Redis takes it.
            self._sharer = asyncio.create_task(self._share_held(), name="books-share-held")

    async def _share_held(self) -> None:
        """Offer what is held here to Redis until it is in (or this edge closes)."""
        wait = SHARE_RETRY_S
        while True:
            audit_in = await self.audit.share_held()
            usage_in = await self.usage.share_held()
            if audit_in and usage_in:
                return
            await asyncio.sleep(wait)
            wait = min(2 * wait, SHARE_RETRY_MAX_S)

    async def aclose(self) -> None:
        if self._pending:
            await asyncio.wait(self._pending, timeout=5.0)  # bounded: each Redis call is
        if self._sharer is not None:
            self._sharer.cancel()
            await asyncio.gather(self._sharer, return_exceptions=True)
            # One last offer (bounded): what Redis still refuses ends with this edge, said here.
            if not (await self.audit.share_held() and await self.usage.share_held()):
                log.warning("redis unreachable at close: books held on this edge were not shared")


__all__ = ["AUDIT_CAP", "Accounting"]
