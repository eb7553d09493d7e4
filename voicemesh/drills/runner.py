"""One drill (callers + a scenario's fault) or one load run, from start to verdicts.

Bounded: a drill stops after ``max_duration_s`` whatever happens, and every fault is undone in
``finally`` before the verdicts are computed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from voicemesh.drills.caller_state import CallerSettings, CallerState
from voicemesh.drills.callers import run_callers
from voicemesh.drills.deployment import Deployment, Report
from voicemesh.drills.drill_context import DrillContext, FaultParams
from voicemesh.drills.faults import FaultMark, Undo
from voicemesh.drills.records import Clock, TurnRecord
from voicemesh.drills.resume_check import resume_verdicts
from voicemesh.drills.scenarios import Scenario
from voicemesh.drills.slo import Slo, Verdict, evaluate, hit_by_fault, percentile
from voicemesh.drills.speech import Utterance, corpus
from voicemesh.drills.tool_calls import tool_call_verdicts


@dataclass
class DrillResult:
    scenario: str
    summary: str
    started: str
    duration_s: float
    callers: int
    settings: dict[str, Any]
    regions: list[str]
    records: list[TurnRecord]
    faults: list[FaultMark]
    verdicts: list[Verdict]
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def stats(self) -> dict[str, Any]:
        return turn_stats(self.records, self.duration_s)


def attach_router_failovers(
    records: Sequence[TurnRecord], failovers: list[dict[str, Any]], clock: Clock
) -> None:
    """Replace what a response's metadata says (the last failover only, undated) with the router's own
    log from the edge's /status: every hop of a turn, with its time, reason and measured gap."""
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for f in failovers:
        try:
            at = clock.from_wall(datetime.fromisoformat(str(f["at"])).timestamp())
        except (KeyError, ValueError):
            continue
        for i, r in enumerate(records):
            end = r.done if r.done is not None else float("inf")
            if r.session_id and f.get("session") == r.session_id and r.speech_end - 0.5 <= at <= end + 0.5:
                by_turn.setdefault(i, []).append(
                    {"at": round(at, 3), "from": f.get("from") or "", "to": f.get("to") or "edge",
                     "reason": f.get("reason", ""), "gap_s": f.get("gap_s")}
                )  # fmt: skip
                break
    for i, hops in by_turn.items():
        records[i].failovers = sorted(hops, key=lambda h: float(h["at"]))
        path = [hops[0]["from"], *[h["to"] for h in hops]]
        records[i].regions = [p for p in path if p and p != "edge"] or records[i].regions


def date_failovers(records: Sequence[TurnRecord], faults: Sequence[FaultMark]) -> None:
    """The edge reports that a turn failed over, not when: a turn hit mid-answer moved at the fault,
    one that started after it moved as it started."""
    for r in records:
        for f in r.failovers:
            if f.get("at") is None:
                fault = hit_by_fault(r, faults)
                f["at"] = fault.at if fault is not None else r.speech_end


def turn_stats(records: Sequence[TurnRecord], duration_s: float) -> dict[str, Any]:
    ttfas = [t for r in records if (t := r.ttfa_s) is not None]
    served: dict[str, int] = {}
    for r in records:
        if r.complete:
            key = "edge (degraded)" if r.degraded else (r.region or "unknown")
            served[key] = served.get(key, 0) + 1
    return {
        "turns": len(records),
        "completed": sum(r.complete for r in records),
        "lost": sum(r.lost for r in records),
        "failed_over": sum(r.failed_over for r in records),
        "degraded": sum(r.degraded for r in records),
        "queued": sum(r.queued_position is not None for r in records),
        "served_by": served,
        "turns_per_s": sum(r.complete for r in records) / duration_s if duration_s > 0 else 0.0,
        "ttfa_p50_s": percentile(ttfas, 50),
        "ttfa_p95_s": percentile(ttfas, 95),
        "ttfa_p99_s": percentile(ttfas, 99),
        "max_audible_gap_s": max((r.max_gap_s for r in records), default=0.0),
        "barged_in": sum(r.barged_in for r in records),
        "longest_silence_s": max((r.longest_silence_s for r in records), default=0.0),
    }


async def run_drill(
    scenario: Scenario,
    deployment: Deployment,
    *,
    callers: int,
    caller_settings: CallerSettings,
    params: FaultParams,
    slo: Slo,
    speech_dir: Path,
    report: Report,
    max_duration_s: float = 600.0,
    on_state: Callable[[CallerState, list[FaultMark]], None] | None = None,
) -> DrillResult:
    utterances = await corpus(speech_dir)
    if not scenario.edges or not deployment.registry_path.exists():
        await deployment.ensure_up(report)
    if not scenario.edges:
        return await _drill(
            scenario, deployment, callers=callers, caller_settings=caller_settings, params=params, slo=slo,
            utterances=utterances, report=report, max_duration_s=max_duration_s, on_state=on_state,
        )  # fmt: skip
    # Edge drills: edges of their own (a shared Redis, a balancer), callers that resume when dropped.
    fleet, passed = deployment.edge_fleet(scenario.edges), False
    await fleet.start(report)
    try:
        deployment = replace(deployment, edge=fleet.target, fleet=fleet)
        await deployment.ensure_up(report)  # the regions (the edges are the fleet's)
        result = await _drill(
            scenario, deployment, callers=callers,
            caller_settings=replace(caller_settings, resume=True), params=params, slo=slo,
            utterances=utterances, report=report, max_duration_s=max_duration_s, on_state=on_state,
        )  # fmt: skip
        passed = result.passed
        return result
    finally:
        await fleet.aclose(keep_logs_for=None if passed else report)  # (a failed drill's evidence)


async def _drill(
    scenario: Scenario,
    deployment: Deployment,
    *,
    callers: int,
    caller_settings: CallerSettings,
    params: FaultParams,
    slo: Slo,
    utterances: list[Utterance],
    report: Report,
    max_duration_s: float,
    on_state: Callable[[CallerState, list[FaultMark]], None] | None,
) -> DrillResult:
    regions = deployment.regions()
    if scenario.callers_over_capacity is not None:
        callers = sum(r.capacity for r in regions) + scenario.callers_over_capacity
    if scenario.answer_sentences:
        caller_settings = caller_settings.answering_in(scenario.answer_sentences)
    if scenario.tool_callers:
        caller_settings = replace(caller_settings, tool_callers=scenario.tool_callers)
    if scenario.barge_in_every:
        caller_settings = replace(caller_settings, barge_in_every=scenario.barge_in_every)
    state = CallerState()
    undo = Undo()
    ctx = DrillContext(deployment, state, params, undo, report, regions=regions)
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t_start = time.monotonic()
    fault_task: asyncio.Task[None] | None = None
    interrupted = False
    try:
        if scenario.needs_proxies:
            ctx.proxies = await deployment.interpose(undo)
        state.clock.reset()
        fault_task = asyncio.ensure_future(scenario.inject(ctx))
        if on_state is not None:
            state.moments.listeners.append(lambda _k, _r: on_state(state, ctx.faults))
        stagger = 0.0 if scenario.callers_over_capacity is not None else 0.7
        try:
            await asyncio.wait_for(
                run_callers(deployment.edge, utterances, callers, caller_settings, state, stagger_s=stagger),
                max_duration_s,
            )
        except TimeoutError:
            ctx.notes.append(f"stopped after {max_duration_s:.0f} s (max duration)")
        except asyncio.CancelledError:  # Ctrl-C: everything is undone and a partial report written
            ctx.notes.append(f"interrupted at {state.clock.now():.0f} s: a partial report")
            interrupted = True
            if (me := asyncio.current_task()) is not None:
                me.uncancel()  # handled: the teardown and the report go on (asyncio.run returns them)
        if interrupted:
            fault_task.cancel()
            await asyncio.gather(fault_task, return_exceptions=True)
        elif not fault_task.done():
            # A fault still running (e.g. a restore) finishes; one still waiting for its moment never fired.
            if not ctx.faults:
                fault_task.cancel()
                ctx.notes.append(
                    f"the fault never fired: no caller reached turn {params.at_turn}'s {params.at_moment}"
                )
            await asyncio.gather(fault_task, return_exceptions=True)
        elif (exc := fault_task.exception()) is not None:
            ctx.notes.append(f"fault injection failed: {type(exc).__name__}: {exc}")
    finally:
        if fault_task is not None and not fault_task.done():
            fault_task.cancel()
            await asyncio.gather(fault_task, return_exceptions=True)
        failed = await undo.run()
        ctx.notes.extend(f"undo {name} failed: see the log" for name in failed)
    end = state.clock.now()
    status = await deployment.edge_status()
    router = status.get("router") or {}
    attach_router_failovers(state.records, list(router.get("recent_failovers") or []), state.clock)
    date_failovers(state.records, ctx.faults)
    verdicts = evaluate(state.records, ctx.faults, slo, end=end) + tool_call_verdicts(state)
    verdicts += resume_verdicts(state, resuming=caller_settings.resume)
    if scenario.verdicts is not None:
        verdicts += scenario.verdicts(state.records, slo)
    if interrupted:
        verdicts.append(Verdict("completed", "the drill ran to its end", "interrupted (Ctrl-C)", False))
    if not ctx.faults:
        verdicts.append(Verdict("fault_injected", "the scenario's fault fired", "no fault fired", False))
    extra = scenario.report_extra() if scenario.report_extra is not None else {}
    return DrillResult(
        scenario=scenario.name,
        summary=scenario.summary,
        started=started,
        duration_s=round(time.monotonic() - t_start, 2),
        callers=callers,
        settings={"turns": caller_settings.turns, "params": params.__dict__, "slo": slo.__dict__, **extra},
        regions=[r.id for r in regions],
        records=sorted(state.records, key=lambda r: (r.caller, r.turn)),
        faults=ctx.faults,
        verdicts=verdicts,
        notes=ctx.notes,
    )


def _forward(
    on_state: Callable[[CallerState, list[FaultMark]], None], state: CallerState, _kind: str, _rec: TurnRecord
) -> None:
    on_state(state, [])


@dataclass
class LoadStep:
    concurrency: int
    duration_s: float
    records: list[TurnRecord]

    def stats(self) -> dict[str, Any]:
        return {
            "concurrency": self.concurrency,
            "duration_s": round(self.duration_s, 2),
            **turn_stats(self.records, self.duration_s),
        }


def load_levels(max_callers: int) -> list[int]:
    """1, 2, 4, ... up to ``max_callers`` (always included)."""
    levels, n = [], 1
    while n < max_callers:
        levels.append(n)
        n *= 2
    return [*levels, max_callers]


async def run_load(
    deployment: Deployment,
    *,
    max_callers: int,
    caller_settings: CallerSettings,
    speech_dir: Path,
    report: Report,
    levels: Sequence[int] | None = None,
    on_state: Callable[[CallerState, list[FaultMark]], None] | None = None,
) -> list[LoadStep]:
    utterances = await corpus(speech_dir)
    await deployment.ensure_up(report)
    steps: list[LoadStep] = []
    for n in levels or load_levels(max_callers):
        report(f"load: {n} concurrent callers x {caller_settings.turns} turns")
        state = CallerState()
        if on_state is not None:
            state.moments.listeners.append(partial(_forward, on_state, state))
        t0 = time.monotonic()
        await run_callers(deployment.edge, utterances, n, caller_settings, state, stagger_s=0.25)
        steps.append(
            LoadStep(n, time.monotonic() - t0, sorted(state.records, key=lambda r: (r.caller, r.turn)))
        )
    return steps
