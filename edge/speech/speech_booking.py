"""A speech request booked like a turn (``kind`` ``speech``; its id stands for the session): its
audit record and usage (``edge/tenancy/accounting.py``), from a cache hit or a router turn.
"""

from __future__ import annotations

from collections.abc import Awaitable

from edge.speech.speech_cache import CachedSpeech
from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import EDGE, NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.usage import UsageDelta
from edge.turns.speech_stream import Book
from router.api import SessionRouting


def book_cache_hit(accounting: Accounting, key_id: str, routing: SessionRouting, turn_id: str,
                   cached: CachedSpeech) -> Awaitable[None]:  # fmt: skip
    """Books a speech cache hit: its audio out, no region (``cache_hit``)."""
    record = AuditRecord(
        at=now(), key_id=key_id, session_id=routing.session_id, turn_id=turn_id, kind="speech",
        residency=None if routing.residency is None else sorted(routing.residency), cache_hit=True,
    )  # fmt: skip
    return accounting.book(record, UsageDelta.of(audio_in_bytes=0, audio_out_bytes=cached.pcm_bytes))


def speech_booking(accounting: Accounting, key_id: str, routing: SessionRouting, turn_id: str) -> Book:
    """Books a speech request like a turn (``kind`` ``speech``; its id stands for the session)."""

    async def book(trail: TurnTrail, status: str) -> None:
        if trail.degraded is not None:
            trail.left_for(NOWHERE if status == "failed" else EDGE)
        outcome, reason = trail.outcome(status, "client_went_away")
        record = AuditRecord(
            at=now(), key_id=key_id, session_id=routing.session_id, turn_id=turn_id, kind="speech",
            residency=None if routing.residency is None else sorted(routing.residency),
            regions=trail.regions, failovers=trail.hops, outcome=outcome, reason=reason,
        )  # fmt: skip
        delta = UsageDelta.of(audio_in_bytes=0, audio_out_bytes=trail.audio_out_bytes)
        await accounting.book(record, delta)

    return book


__all__ = ["book_cache_hit", "speech_booking"]
