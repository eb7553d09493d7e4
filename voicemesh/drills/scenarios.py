"""The drills: what fault each one injects, on which region, and at which moment of a turn.

Every fault fires at a moment of a turn (by default when the first words of turn ``at_turn``'s
answer reach a caller, i.e. mid-answer), lasts ``hold_s``, and is undone; ``Undo`` guarantees the undo
also runs when the drill is interrupted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.deployment import Deployment, DeploymentError, RegionInfo, Report
from voicemesh.drills.edges import EdgeFleet
from voicemesh.drills.faults import FaultMark, FaultProxy, Undo, hang, resume
from voicemesh.drills.records import TurnRecord
from voicemesh.processes import kill_tree


@dataclass(frozen=True)
class FaultParams:
    at_turn: int = 2
    """Inject during this turn (1-based) of any caller, at ``at_moment``."""
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


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    inject: Inject
    needs_proxies: bool = False
    callers_over_capacity: int | None = None
    """region-saturated: callers = every region's capacity summed + this (overrides --callers)."""
    tool_callers: int = 0
    """Callers that call a function every turn (``voicemesh/drills/tool_calls.py``); the report counts
    their calls lost and duplicated."""
    edges: int = 0
    """Edge drills: the runner starts this many edges of their own (sharing a Redis, behind a
    balancer; ``voicemesh/drills/edges.py``), and the callers resume their sessions when dropped."""


async def _crash(ctx: DrillContext) -> None:
    rec, region = await ctx.serving_target()
    killed = kill_tree(ctx.deployment.pid(region))
    i = ctx.mark(
        "SIGKILL", region.id, f"pids {killed} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    ctx.undo.push("restore", lambda: ctx.deployment.restore(ctx.report))
    await asyncio.sleep(ctx.params.hold_s)
    ctx.undo.pop("restore")
    await ctx.deployment.restore(ctx.report)
    ctx.end(i)


async def _hang(ctx: DrillContext) -> None:
    rec, region = await ctx.serving_target()
    pid = ctx.deployment.pid(region)

    async def undo_hang() -> None:
        resume(pid)

    hang(pid)
    ctx.undo.push("sigcont", undo_hang)
    i = ctx.mark(
        "SIGSTOP", region.id, f"pid {pid} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    try:
        await asyncio.sleep(ctx.params.hold_s)
    finally:
        resume(pid)
        ctx.undo.pop("sigcont")
    ctx.end(i)


async def _slow(ctx: DrillContext) -> None:
    region = await ctx.busiest(await ctx.moment())  # (it lasts: the next answers meet it anyway)
    proxy = ctx.proxies[region.id]

    async def fast() -> None:
        proxy.latency_s = 0.0

    proxy.latency_s = ctx.params.latency_s
    ctx.undo.push("latency", fast)
    i = ctx.mark("latency", region.id, f"+{ctx.params.latency_s * 1000:.0f} ms each way")
    await asyncio.sleep(ctx.params.hold_s)
    await fast()
    ctx.undo.pop("latency")
    ctx.end(i)


async def _flap(ctx: DrillContext) -> None:
    region = await ctx.busiest(await ctx.moment())  # (it lasts: the next answers meet it anyway)
    proxy = ctx.proxies[region.id]
    ctx.undo.push("proxy-up", proxy.up)
    for n in range(ctx.params.flaps):
        cut = await proxy.down()
        i = ctx.mark("down", region.id, f"flap {n + 1}/{ctx.params.flaps}: refused, {cut} connections cut")
        await asyncio.sleep(ctx.params.down_s)
        await proxy.up()
        ctx.end(i)
        await asyncio.sleep(ctx.params.up_s)
    ctx.undo.pop("proxy-up")


async def _all_down(ctx: DrillContext) -> None:
    rec = await ctx.moment()

    async def all_up() -> None:
        for proxy in ctx.proxies.values():
            await proxy.up()

    ctx.undo.push("all-up", all_up)
    cut = sum([await p.down() for p in ctx.proxies.values()])
    i = ctx.mark(
        "all-down",
        "all",
        f"every region refused, {cut} connections cut (caller {rec.caller} turn {rec.turn})",
    )
    await asyncio.sleep(ctx.params.hold_s)
    await all_up()
    ctx.undo.pop("all-up")
    ctx.end(i)


async def _saturate(ctx: DrillContext) -> None:
    # The load is the fault: it starts with the callers and lasts the whole drill (no end mark).
    capacity = sum(r.capacity for r in ctx.regions)
    ctx.mark("saturation", "all", f"callers above the {capacity} slots of {len(ctx.regions)} regions")


async def _edge_crash(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    edge = await fleet.serving(rec.session_id) or fleet.edges[0]
    ctx.undo.push("edges", fleet.restore)
    killed = fleet.kill(edge)
    i = ctx.mark(
        "SIGKILL", edge.name, f"pids {killed} at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    await asyncio.sleep(ctx.params.hold_s)
    await fleet.restore()  # as its supervisor would (Kubernetes, `voicemesh up`)
    ctx.undo.pop("edges")
    ctx.end(i)


async def _edge_drain(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    ctx.undo.push("edges", fleet.restore)
    for edge in list(fleet.edges):  # a rolling restart: one edge at a time, each drained
        i = ctx.mark("SIGTERM", edge.name, f"drain and restart (caller {rec.caller} turn {rec.turn} playing)")
        code = await fleet.drain(edge)
        await fleet.start_edge(edge)
        ctx.end(i)
        ctx.report(f"{edge.name} drained (exit {code:g}) and started again")
    ctx.undo.pop("edges")


async def _redis_down(ctx: DrillContext) -> None:
    fleet = ctx.fleet()
    rec = await ctx.moment()
    ctx.undo.push("edges", fleet.restore)
    await fleet.stop_redis()
    i = ctx.mark(
        "redis-down", "redis", f"SIGKILL at caller {rec.caller} turn {rec.turn} {ctx.params.at_moment}"
    )
    await asyncio.sleep(ctx.params.hold_s)
    await fleet.start_redis()
    ctx.end(i)
    # Resume works again once the edges copied their outage writes back (their store's retry_s):
    # the edge serving the next answer is killed, and its callers resume on the other one.
    await asyncio.sleep(3.0)
    try:
        nxt = await ctx.state.moments.wait(ctx.params.at_moment, timeout_s=ctx.params.moment_timeout_s)
    except TimeoutError:
        ctx.notes.append("no answer after Redis came back: resume after the outage was not exercised")
        ctx.undo.pop("edges")
        return
    edge = await fleet.serving(nxt.session_id) or fleet.edges[0]
    killed = fleet.kill(edge)
    j = ctx.mark(
        "SIGKILL", edge.name, f"after redis returned: pids {killed} at caller {nxt.caller} turn {nxt.turn}"
    )
    await asyncio.sleep(2.0)
    await fleet.restore()
    ctx.undo.pop("edges")
    ctx.end(j)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "region-crash",
            "SIGKILL the busiest region mid-answer (one caller calls a function every turn);"
            " Terraform brings it back",
            _crash,
            tool_callers=1,
        ),
        Scenario("region-hang", "SIGSTOP the busiest region mid-answer, SIGCONT after hold_s", _hang),
        Scenario("region-slow", "a fault proxy adds latency in front of the busiest region", _slow, True),
        Scenario(
            "region-flap", "the busiest region goes down and up repeatedly (proxy refuses, cuts)", _flap, True
        ),
        Scenario(
            "all-regions-down",
            "every region refuses; the edge voice answers, then regions recover",
            _all_down,
            True,
        ),
        Scenario(
            "region-saturated",
            "more callers than capacity: queueing and overflow to another region",
            _saturate,
            callers_over_capacity=1,
        ),
        Scenario(
            "edge-crash",
            "SIGKILL the edge serving a caller mid-answer; callers resume on the other edge",
            _edge_crash,
            edges=2,
        ),
        Scenario(
            "edge-drain",
            "rolling restart of every edge (SIGTERM: drain) while callers talk; they resume",
            _edge_drain,
            edges=2,
        ),
        Scenario(
            "redis-down",
            "the session store's Redis dies mid-answer; sessions go on; after it is back an edge is"
            " killed and its callers resume",
            _redis_down,
            edges=2,
        ),
    )
}
