"""What the edge said about where a turn was served: the response's metadata (its region, the region
it failed over from, a degraded answer) and the edge's vendor events (routed, failed over, queued)."""

from __future__ import annotations

from typing import Any

from voicemesh.drills.records import TurnRecord
from voicemesh.realtime import (
    META_DEGRADED,
    META_DEGRADED_REASON,
    META_FAILED_OVER_FROM,
    META_REGION,
    VENDOR_PREFIX,
)


def note_route(response: dict[str, Any], rec: TurnRecord) -> None:
    """Where the response was served, from its metadata."""
    meta = response.get("metadata") or {}
    moved_from = str(meta.get(META_FAILED_OVER_FROM, ""))
    region = str(meta.get(META_REGION, ""))
    if moved_from and not rec.failovers:
        # The failover events carry the time; the metadata (last failover only) is the fallback.
        rec.add_region(moved_from)
        rec.failovers.append({"at": None, "from": moved_from, "to": region or "edge", "reason": ""})
    rec.add_region(region)
    if str(meta.get(META_DEGRADED, "")).lower() == "true":
        rec.degraded = True
        rec.degraded_reason = str(meta.get(META_DEGRADED_REASON, ""))


def note_vendor(kind: str, event: dict[str, Any], rec: TurnRecord, now: float) -> None:
    """What an edge's vendor event (``voicemesh.*``) says about the turn's route."""
    name = kind.removeprefix(VENDOR_PREFIX)
    if name == "turn.routed":
        rec.add_region(str(event.get("region", "")))
    elif name == "turn.failed_over":
        rec.failovers.append(
            {
                "at": now,
                "from": event.get("from_region", ""),
                "to": event.get("to_region", ""),
                "reason": event.get("reason", ""),
            }
        )
        rec.add_region(str(event.get("to_region", "")))
    elif name == "degraded":
        rec.degraded = True
    elif name == "turn.queued":
        position = int(event.get("position", 0))
        rec.queued_position = max(position, rec.queued_position or 0)
