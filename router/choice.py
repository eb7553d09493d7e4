"""Which regions may serve a session, and in which order to try them.

Pure functions over the router's health table: cheap (they run for every turn) and easy to test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable

from router.health import RegionHealth, Score
from router.registry import RegionRecord


def residency_allows(record: RegionRecord, residency: frozenset[str] | None) -> bool:
    """``None`` = anywhere; otherwise the region must carry one of the session's tags."""
    return residency is None or not residency.isdisjoint(record.residency)


def rank(
    regions: Iterable[RegionHealth],
    *,
    residency: frozenset[str] | None,
    may_admit: Callable[[str], bool],
    exclude: Collection[str] = (),
    sticky: str | None = None,
    stickiness_s: float = 1.0,
    now: float | None = None,
) -> list[tuple[RegionHealth, Score]]:
    """Allowed, reachable regions whose breaker admits a call, best score first.

    The session's sticky region goes first while it is healthy (reachable, breaker closed, no
    recent failure) and not worse than the best by more than ``stickiness_s``: moving a
    conversation has a cost (cold caches, a new voice path) that a small score difference does
    not pay for, but a queue at the sticky region while another sits idle does.
    """
    now = time.monotonic() if now is None else now
    out: list[tuple[RegionHealth, Score]] = []
    for r in regions:
        if r.id in exclude or not residency_allows(r.record, residency):
            continue
        if not r.reachable or not may_admit(r.id):
            continue
        out.append((r, r.score(now)))
    out.sort(key=lambda rs: rs[1].total_s)
    if sticky is not None:
        for i, (r, sc) in enumerate(out):
            if r.id == sticky:
                if i and sc.penalty_s < 0.5 and sc.total_s - out[0][1].total_s <= stickiness_s:
                    out.insert(0, out.pop(i))
                break
    return out
