"""What a drill's fault sees: its parameters (which turn and moment, how long), the deployment, the
callers' state, and the undo stack; and how it finds the region serving the moment's turn."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.deployment import Deployment, DeploymentError, RegionInfo, Report
from voicemesh.drills.edges import EdgeFleet
from voicemesh.drills.faults import FaultMark, FaultProxy, Undo
from voicemesh.drills.records import TurnRecord

WRITING_POLL_S = 0.05
"""How often ``DrillContext.writing`` asks the regions (loopback; an answer is written in 1-5 s)."""


@dataclass(frozen=True)
class FaultParams:
    at_turn: int | None = 2
    """Inject during this turn (1-based) of any caller, at ``at_moment``; None: any turn (chaos)."""
    at_moment: str = "first_text"
    """``first_text``: the answer's first words reach the caller, so the region is still writing
    and speaking it (the fault lands mid-answer); ``first_audio``: its first audio, by which time
    the edge may already hold a short answer's whole audio."""
    hold_s: float = 8.0
    """How long the fault lasts before it is undone."""
    latency_s: float = 0.6
    """region-slow: added per chunk, each direction."""
    flaps: int = 3
    down_s: float = 2.0
    up_s: float = 3.0
    moment_timeout_s: float = 180.0
    retargets: int = 3
    """A region fault waits for a later moment (any caller) when the region serving the moment's
    turn has already answered it whole (a short answer can be done before its first words are
    heard): a crash or hang of an idle region would test nothing. At most this many times, each
    wait at most ``retarget_wait_s``."""
    retarget_wait_s: float = 30.0


@dataclass
class DrillContext:
    deployment: Deployment
    state: CallerState
    params: FaultParams
    undo: Undo
    report: Report
    proxies: dict[str, FaultProxy] = field(default_factory=dict)
    regions: list[RegionInfo] = field(default_factory=list)
    """The regions as deployed (direct URLs, before any proxy)."""
    faults: list[FaultMark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def mark(self, kind: str, region: str, detail: str = "") -> int:
        self.faults.append(FaultMark(self.state.clock.now(), kind, region, detail))
        self.report(f"fault: {kind} {region} {detail}".rstrip())
        return len(self.faults) - 1

    def end(self, index: int) -> None:
        f = self.faults[index]
        self.faults[index] = FaultMark(f.at, f.kind, f.region, f.detail, until=self.state.clock.now())

    async def moment(self) -> TurnRecord:
        return await self.state.moments.wait(
            self.params.at_moment, turn=self.params.at_turn, timeout_s=self.params.moment_timeout_s
        )

    async def serving_target(self) -> tuple[TurnRecord, RegionInfo]:
        """The moment's turn and the region serving it, while that region still has a turn running
        (its ``/health``); otherwise the next moment's, up to ``retargets`` times."""
        rec = await self.moment()
        region = await self.busiest(rec)
        for _ in range(self.params.retargets):
            health = await self.deployment.region_health(region)
            if health is None or _load(health) > 0:
                break  # (no answer: it is busy, or already failing; either way, the fault lands)
            self.notes.append(
                f"{region.id} had already answered caller {rec.caller} turn {rec.turn} whole: the fault"
                " waited for the next answer"
            )
            try:
                rec = await self.state.moments.wait(
                    self.params.at_moment, timeout_s=self.params.retarget_wait_s
                )
            except TimeoutError:
                break
            region = await self.busiest(rec)
        return rec, region

    async def writing(self, regions: list[RegionInfo], timeout_s: float) -> tuple[RegionInfo, int] | None:
        """The first of ``regions`` whose LLM is writing an answer (its ``/health`` ``running.llm``)
        and how many, polled every ``WRITING_POLL_S``; None if none was within ``timeout_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while loop.time() < deadline:
            healths = await asyncio.gather(*(self.deployment.region_health(r) for r in regions))
            for region, health in zip(regions, healths, strict=True):
                running = (health or {}).get("running")
                if isinstance(running, dict) and (n := int(running.get("llm") or 0)) > 0:
                    return region, n
            await asyncio.sleep(WRITING_POLL_S)
        return None

    def fleet(self) -> EdgeFleet:
        if self.deployment.fleet is None:
            raise DeploymentError("an edge drill needs its edge fleet (run_drill starts it)")
        return self.deployment.fleet

    async def busiest(self, hint: TurnRecord | None = None) -> RegionInfo:
        """The region serving the hint's turn (the edge announces it with ``voicemesh.turn.routed``),
        so the fault lands mid-answer; without one, the most running + queued turns (its /health)."""
        serving = [r for r in self.regions if hint is not None and r.id == hint.region]
        if serving:
            return serving[0]
        healths = await asyncio.gather(*(self.deployment.region_health(r) for r in self.regions))
        return max(zip(self.regions, healths, strict=True), key=lambda item: _load(item[1] or {}))[0]


def _load(health: dict[str, object]) -> float:
    """Turns running plus queued, from a region's ``/health``."""
    active = health.get("active", 0)
    queued = health.get("queue_depth", 0)
    return float(
        (active if isinstance(active, int | float) else 0)
        + (queued if isinstance(queued, int | float) else 0)
    )


Inject = Callable[[DrillContext], Awaitable[None]]
