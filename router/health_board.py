"""The one owner of every region's health: its measures (``RegionHealth``) and its breaker.

Everything that learns something about a region reports it here, and only here: the prober
(``probed``), an attempt's deadline as the answer arrives (``measured``), and a turn's failover loop
when a region's try ends (``turn_ended``, ``abandoned``). Ranking and the breakers' admission read
the same table. Whether an ending counts against the region is decided once, in
``counts_as_failure``: a ``busy`` answer is a healthy region saying so quickly, so it neither
trips the breaker nor adds to the region's failure penalty.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from router.breakers import BreakerBoard
from router.choice import rank, residency_allows
from router.health import HealthReport, RegionHealth, Score
from router.registry import Registry
from router.settings import RouterSettings
from wire.errors import BreakerOpen, NoRegionAvailable, RegionBusy, RegionError, ResidencyRefused

log = logging.getLogger(__name__)


def counts_as_failure(outcome: RegionError) -> bool:
    """A full region is healthy (it said so quickly): only real failures count against it."""
    return not isinstance(outcome, RegionBusy | BreakerOpen)


@dataclass(frozen=True, slots=True)
class Latency:
    """One latency measure heard during an attempt (``router.deadlines``)."""

    kind: Literal["first_byte", "first_audio", "clause_gap"]
    seconds: float
    clause_chars: int = 0
    """For ``clause_gap``: the length of the clause whose audio ended the gap."""


class HealthBoard:
    """Every region's ``RegionHealth`` (from the registry) and its breaker (``BreakerBoard``)."""

    def __init__(self, settings: RouterSettings, breakers: BreakerBoard) -> None:
        self._settings = settings
        self.breakers = breakers
        self._regions: dict[str, RegionHealth] = {}

    @property
    def regions(self) -> Mapping[str, RegionHealth]:
        return self._regions

    def apply(self, registry: Registry) -> list[str]:
        """Take the registry's regions; unchanged ones keep their measures. Returns the regions whose
        connections must go: gone from the registry, or moved to another URL."""
        new: dict[str, RegionHealth] = {}
        moved: list[str] = []
        for record in registry.regions:
            old = self._regions.get(record.id)
            if old is not None and old.record == record:
                new[record.id] = old
            else:
                new[record.id] = RegionHealth(record, self._settings)
                if old is not None:
                    moved.append(record.id)
        moved += [gone for gone in self._regions if gone not in new]
        self._regions = new
        return moved

    # Reads: ranking and admission.
    def rank(
        self, residency: frozenset[str] | None, *, exclude: Collection[str] = (), sticky: str | None = None
    ) -> list[tuple[RegionHealth, Score]]:
        return rank(
            self._regions.values(),
            residency=residency,
            may_admit=self.breakers.may_admit,
            exclude=exclude,
            sticky=sticky,
            stickiness_s=self._settings.stickiness_s,
        )

    def nothing_left_reason(self, residency: frozenset[str] | None) -> str:
        """Why no region can take a turn: the session's residency, or plain unavailability."""
        if residency is not None and not any(
            residency_allows(r.record, residency) for r in self._regions.values()
        ):
            return ResidencyRefused.code
        return NoRegionAvailable.code

    def usable(self, region: str) -> bool:
        """Worth a warm connection: known, reachable, and its breaker would let a turn through."""
        r = self._regions.get(region)
        return r is not None and r.reachable and self.breakers.may_admit(region)

    async def refresh(self) -> None:
        """Re-read the breakers' shared state (other replicas' verdicts)."""
        await self.breakers.refresh(list(self._regions))

    async def admit(self, region: RegionHealth) -> None:
        """Raise ``BreakerOpen`` unless the region's breaker lets a turn through now."""
        await self.breakers.admit(region.id)

    # Reports.
    def probed(
        self, region: RegionHealth, report: HealthReport | None, rtt_s: float, error: str = "",
        *, timed_out: bool = False,
    ) -> None:  # fmt: skip
        """A health probe's answer (``None``: it failed; see ``RegionHealth.observe_probe``)."""
        region.observe_probe(report, rtt_s, error, timed_out=timed_out)

    def measured(self, region: RegionHealth, latency: Latency) -> None:
        """A latency measure from a live turn's answer."""
        if latency.kind == "first_byte":
            region.observe_first_byte(latency.seconds)
        elif latency.kind == "first_audio":
            region.observe_ttfa(latency.seconds)
        else:
            region.observe_clause_gap(latency.seconds, latency.clause_chars)

    async def turn_ended(
        self, region: RegionHealth, outcome: RegionError | None, *, duration_s: float | None = None
    ) -> None:
        """A region's try at a turn ended: served (``outcome`` ``None``; ``duration_s`` when its length
        says something of the region's speed) or failed with ``outcome``."""
        if outcome is None:
            await self.breakers.record(region.id, None)
            if duration_s is not None:
                region.observe_success(duration_s)
        elif counts_as_failure(outcome):
            await self.breakers.record(region.id, outcome)
            region.observe_failure()
        else:
            self.breakers.release(region.id)

    def abandoned(self, region: RegionHealth) -> None:
        """The try ended with no verdict on the region (the caller cancelled, or the request was at
        fault): its half-open trial slot, if it held one, is free again."""
        self.breakers.release(region.id)

    def status(self, region: RegionHealth) -> dict[str, object]:
        entry = region.status()
        entry["breaker"] = self.breakers.status(region.id)
        return entry
