"""The chaos drill: random faults of every kind the drills know, one after another and overlapping.

``CHAOS_KINDS`` is the registry: a name, the drills' own fault (``region_faults.py``,
``edge_faults.py``; nothing is re-implemented here) and the tier it takes out. A new fault kind is
one line there. ``plan_chaos`` draws a schedule from a seed (the report prints it, so a run can be
replayed): every kind once in a random order, then random kinds, bounded in count and in time, at
most ``max_overlap`` at once and never two on the same tier at once, so one region and one edge at
most are out at any moment (never every region and every edge). ``run_chaos`` plays the schedule
against the deployment; the same rules hold at run time (faults last as long as they last: a
restore by Terraform takes what it takes), a fault that cannot start inside the window is skipped
and noted. When the window is over the callers finish the turn they are in and hang up.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from voicemesh.drills.drill_context import DrillContext, Inject
from voicemesh.drills.edge_faults import crash_edge, drain_edges, redis_down
from voicemesh.drills.llm_faults import crash_llm
from voicemesh.drills.region_faults import crash_region, flap_region, hang_region, slow_region


@dataclass(frozen=True)
class ChaosKind:
    name: str
    inject: Inject
    tier: str
    """What the fault takes out (``region``, ``edge``): two faults on one tier never overlap."""


CHAOS_KINDS: dict[str, ChaosKind] = {
    k.name: k
    for k in (
        ChaosKind("region-crash", crash_region, "region"),
        ChaosKind("region-hang", hang_region, "region"),
        ChaosKind("region-slow", slow_region, "region"),
        ChaosKind("region-flap", flap_region, "region"),
        ChaosKind("edge-crash", crash_edge, "edge"),
        ChaosKind("edge-drain", drain_edges, "edge"),
        ChaosKind("redis-down", redis_down, "edge"),
        # The local regions share one vLLM: its death is every region's fault at once.
        ChaosKind("llm-crash", crash_llm, "region"),
    )
}


@dataclass(frozen=True)
class ChaosConfig:
    seed: int
    minutes: float
    max_faults: int = 40
    max_overlap: int = 2
    hold_s: tuple[float, float] = (3.0, 10.0)
    """Each fault's hold is drawn in this range."""
    gap_s: tuple[float, float] = (2.0, 20.0)
    """The wait from one fault's start to the next one's, drawn in this range (short: they overlap)."""
    warmup_s: float = 15.0
    """No fault before the callers have had their first answers."""
    kinds: tuple[str, ...] = tuple(CHAOS_KINDS)

    @property
    def window_s(self) -> float:
        return self.minutes * 60.0


@dataclass(frozen=True)
class PlannedFault:
    kind: str
    at_s: float
    hold_s: float


def plan_chaos(config: ChaosConfig) -> list[PlannedFault]:
    """The seeded schedule. Overlap rules are checked on the planned holds (``max_overlap``, one
    fault per tier at once); a start that breaks them moves to the end of the fault in the way."""
    unknown = [k for k in config.kinds if k not in CHAOS_KINDS]
    if unknown:
        raise ValueError(f"unknown chaos fault kinds {unknown}: known are {', '.join(CHAOS_KINDS)}")
    rng = random.Random(config.seed)
    first = list(config.kinds)
    rng.shuffle(first)  # every kind once, in a random order, then random kinds
    plan: list[PlannedFault] = []
    t = config.warmup_s
    while len(plan) < config.max_faults:
        kind = first.pop(0) if first else rng.choice(config.kinds)
        tier = CHAOS_KINDS[kind].tier
        while True:  # the earliest moment from t this fault may start at (in centiseconds)
            t = math.ceil(t * 100) / 100
            active = [p for p in plan if p.at_s <= t < p.at_s + p.hold_s]
            blocking = [p for p in active if CHAOS_KINDS[p.kind].tier == tier]
            if len(active) < config.max_overlap and not blocking:
                break
            # Past the end of the fault in the way: its end is a float sum, whose last bit could
            # round a start at it back inside it.
            t = min(p.at_s + p.hold_s for p in (blocking or active)) + 0.005
        if t >= config.window_s:
            break
        plan.append(PlannedFault(kind, t, round(rng.uniform(*config.hold_s), 2)))
        t += rng.uniform(*config.gap_s)
    return plan


def max_overlap(plan: Sequence[PlannedFault]) -> int:
    """The most planned faults holding at once."""
    return max((sum(q.at_s <= p.at_s < q.at_s + q.hold_s for q in plan) for p in plan), default=0)


@dataclass
class ChaosContext(DrillContext):
    """One chaos fault's view of the drill: the shared one, with its own parameters, and its marks
    named after its kind (``region-crash: SIGKILL``)."""

    label: str = ""

    def mark(self, kind: str, region: str, detail: str = "") -> int:
        return super().mark(f"{self.label}: {kind}", region, detail)


@dataclass
class ChaosRun:
    """The schedule as played: what each planned fault became (``started``/``skipped``/``failed``)."""

    config: ChaosConfig
    plan: list[PlannedFault]
    outcomes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.outcomes = self.outcomes or ["planned"] * len(self.plan)


async def run_chaos(ctx: DrillContext, run: ChaosRun) -> None:
    """Play ``run.plan`` against the deployment, then tell the callers to hang up (``stopping``)."""
    slots = asyncio.Semaphore(run.config.max_overlap)
    tiers = {k.tier: asyncio.Lock() for k in CHAOS_KINDS.values()}
    tasks = [
        asyncio.create_task(_one(ctx, run, i, slots, tiers[CHAOS_KINDS[p.kind].tier]))
        for i, p in enumerate(run.plan)
    ]
    try:
        await asyncio.gather(*tasks)
        await asyncio.sleep(max(0.0, run.config.window_s - ctx.state.clock.now()))
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        ctx.state.stopping = True


async def _one(
    ctx: DrillContext, run: ChaosRun, i: int, slots: asyncio.Semaphore, tier: asyncio.Lock
) -> None:
    planned = run.plan[i]
    await asyncio.sleep(max(0.0, planned.at_s - ctx.state.clock.now()))
    async with slots, tier:
        late = ctx.state.clock.now()
        if late >= run.config.window_s:
            run.outcomes[i] = "skipped"
            ctx.notes.append(
                f"{planned.kind} (planned at {planned.at_s:.0f} s) skipped: the window ended first"
            )
            return
        flaps = max(1, round(planned.hold_s / (ctx.params.down_s + ctx.params.up_s)))
        params = replace(ctx.params, at_turn=None, hold_s=planned.hold_s, flaps=flaps)
        sub = ChaosContext(
            ctx.deployment, ctx.state, params, ctx.undo, ctx.report, ctx.proxies, ctx.regions, ctx.faults,
            ctx.notes, label=planned.kind,
        )  # fmt: skip
        run.outcomes[i] = "started"
        try:
            await CHAOS_KINDS[planned.kind].inject(sub)
        except Exception as exc:  # one fault failing is a result to note; the others go on
            run.outcomes[i] = "failed"
            ctx.notes.append(f"{planned.kind} at {late:.0f} s failed: {type(exc).__name__}: {exc}")
        if ctx.proxies:
            # A region restored by Terraform is written back to the registry at its own URL: the
            # proxies go back in front of it, or later slow and flap faults would act on nothing.
            await ctx.deployment.repoint(ctx.proxies)
