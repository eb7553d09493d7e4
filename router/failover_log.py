"""The router's recent failovers and degraded turns, as typed records keyed by turn.

``status()["recent_failovers"]`` (the ops page, the drills) reads them as JSON dicts with the keys
``at, session, turn_id, from, to, reason, detail, heard_chars, gap_s, warm_connection``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime

import msgspec


class FailoverRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One turn leaving a region: for another (``to_region``) or for the edge's fallback (``None``)."""

    at: str
    """When it happened (ISO 8601, UTC)."""
    session: str
    turn_id: str
    from_region: str | None = msgspec.field(name="from")
    to_region: str | None = msgspec.field(name="to")
    reason: str
    """A ``wire.errors`` code, or why the turn degraded."""
    detail: str = ""
    heard_chars: int = 0
    """How much of the answer the user had heard when it moved."""
    gap_s: float | None = None
    """From the failure to the next region's first audio (set once that audio arrives)."""
    warm_connection: bool | None = None
    """Whether the next region was reached on a pooled connection."""

    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat()


class FailoverLog:
    """The last ``size`` records, newest last, plus a count of every degraded turn."""

    def __init__(self, size: int) -> None:
        self._records: deque[FailoverRecord] = deque(maxlen=size)
        self.degraded = 0

    def failed_over(self, record: FailoverRecord) -> None:
        self._records.append(record)

    def degraded_turn(self, record: FailoverRecord) -> None:
        self.degraded += 1
        self._records.append(record)

    def note_gap(self, session: str, turn_id: str, gap_s: float, warm: bool | None) -> bool:
        """The turn's latest failover heard its next region: record the gap on that turn's own record
        (other turns may have failed over since). False if the record has already left the log."""
        for i in range(len(self._records) - 1, -1, -1):
            rec = self._records[i]
            if rec.turn_id == turn_id and rec.session == session and rec.to_region is not None:
                self._records[i] = msgspec.structs.replace(rec, gap_s=round(gap_s, 4), warm_connection=warm)
                return True
        return False

    def for_turn(self, turn_id: str) -> list[FailoverRecord]:
        return [r for r in self._records if r.turn_id == turn_id]

    def __iter__(self) -> Iterator[FailoverRecord]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def as_json(self) -> list[dict[str, object]]:
        return [msgspec.to_builtins(r) for r in self._records]
