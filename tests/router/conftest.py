"""Shared pieces of the router's real-process tests."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from router.api import Degraded, FailedOver, Routed, RoutedEvent
from router.registry import Location, RegionRecord
from wire.client import ClauseAudio
from wire.turn import TextDelta, Transcript, TurnDone, TurnStart

CRASH_REASONS = frozenset({"region_disconnected", "first_byte_timeout"})
"""How a killed region may be noticed: its connection drops, or (when a failed health probe or a
deadline comes first) it goes silent. Either is correct; which one wins is a race."""
HANG_REASONS = frozenset({"first_byte_timeout", "region_unavailable"})
"""How a stopped region may be noticed: a first-byte/stall deadline or a failed probe (both
``first_byte_timeout``), or a handshake that never completes when no pooled connection was left."""

EDGE = Location(50.0, 8.0)
NEAR = Location(50.1, 8.1)
FAR = Location(38.9, -77.4)


def record(region: object, location: Location, residency: tuple[str, ...] = ()) -> RegionRecord:
    return RegionRecord(
        id=region.id,  # type: ignore[attr-defined]
        url=region.url,  # type: ignore[attr-defined]
        location=location,
        residency=list(residency),
        capacity=2,
    )


def text_turn(text: str = "Describe Paris in three short sentences.", max_tokens: int = 60) -> TurnStart:
    return TurnStart(turn_id=uuid.uuid4().hex[:10], text=text, max_output_tokens=max_tokens, temperature=0.0)


@dataclass
class Seen:
    """Events of one routed turn, grouped by the region that sent them, with arrival times."""

    events: list[tuple[float, RoutedEvent]] = field(default_factory=list)
    routed: list[str] = field(default_factory=list)
    clauses: dict[str, list[str]] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    transcripts: dict[str, str] = field(default_factory=dict)
    failovers: list[FailedOver] = field(default_factory=list)
    done: TurnDone | None = None
    degraded: Degraded | None = None

    def add(self, ev: RoutedEvent) -> None:
        self.events.append((time.perf_counter(), ev))
        region = self.routed[-1] if self.routed else ""
        if isinstance(ev, Routed):
            self.routed.append(ev.region)
        elif isinstance(ev, ClauseAudio):
            assert ev.pcm, "a clause without audio"
            self.clauses.setdefault(region, []).append(ev.clause.text)
        elif isinstance(ev, TextDelta):
            self.text[region] = self.text.get(region, "") + ev.delta
        elif isinstance(ev, Transcript):
            self.transcripts[region] = ev.text
        elif isinstance(ev, FailedOver):
            self.failovers.append(ev)
        elif isinstance(ev, TurnDone):
            self.done = ev
        elif isinstance(ev, Degraded):
            self.degraded = ev

    def first_time(self, kind: type, after: float = 0.0) -> float | None:
        return next((t for t, ev in self.events if isinstance(ev, kind) and t >= after), None)


async def collect(events: AsyncIterator[RoutedEvent]) -> Seen:
    seen = Seen()
    async for ev in events:
        seen.add(ev)
    return seen


def words(text: str) -> list[str]:
    return [w.strip(".,!?;:\"'").lower() for w in text.split() if w.strip(".,!?;:\"'")]


# Probes run every half second: keep their request lines out of failure reports.
logging.getLogger("httpx").setLevel(logging.WARNING)
