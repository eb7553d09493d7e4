"""``voicemesh bench router``: what a region failure costs a caller, and what a routing decision costs.

Given two or more running regions it can signal (``RegionProcess``; ``voicemesh bench router``
starts ``voicemesh.bench.regions.LocalRegion`` children), it measures:

* the region's normal time to first audio through the router;
* the failover gap after a crash (SIGKILL while the region is answering): from the kill to the
  first audio from the next region;
* the failover gap after a hang mid-answer (SIGSTOP while answering; noticed by the stall
  deadline) and before the answer (SIGSTOP just before the turn; noticed by the first-byte
  deadline): from the stop to the first audio from the next region;
* the cost of one routing decision (ranking all regions), in microseconds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from router.api import FailedOver, Routed, SessionRouting
from router.core import Router
from router.registry import Location, RegionRecord, Registry
from router.settings import RouterSettings
from voicemesh.processes import wait_for
from wire.client import ClauseAudio
from wire.turn import TurnDone, TurnStart


class RegionProcess(Protocol):
    """A region the bench may kill, stop and bring back."""

    @property
    def id(self) -> str: ...
    @property
    def url(self) -> str: ...
    @property
    def pid(self) -> int: ...
    async def restart(self) -> None: ...


@dataclass
class Trial:
    gap_s: float | None = None
    detect_s: float | None = None
    served_by: str = ""
    failed_region: str = ""
    completed: bool = False


@dataclass
class BenchResult:
    normal_ttfa_s: list[float] = field(default_factory=list)
    crash: list[Trial] = field(default_factory=list)
    hang_mid: list[Trial] = field(default_factory=list)
    hang_first_byte: list[Trial] = field(default_factory=list)
    decision_us: dict[str, float] = field(default_factory=dict)


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (few samples: no interpolation pretending to precision)."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s) + 0.5) - 1))]


def bench_settings(regions: Sequence[RegionProcess]) -> tuple[RouterSettings, Registry]:
    registry = Registry(
        regions=[
            RegionRecord(id=r.id, url=r.url, location=Location(50.0, 8.0 + i)) for i, r in enumerate(regions)
        ]
    )
    # Breakers would (correctly) shut a region that this bench kills again and again; the bench
    # measures failover, so it keeps them out of the way.
    settings = RouterSettings(location=Location(50.0, 8.0), probe_interval_s=0.5, breaker_fail_max=1000)
    return settings, registry


def _start(prompt: str, max_tokens: int) -> TurnStart:
    return TurnStart(
        turn_id=uuid.uuid4().hex[:12], text=prompt, max_output_tokens=max_tokens, temperature=0.0
    )


async def _wait_all_ready(router: Router, timeout_s: float = 60.0) -> None:
    """Until the router itself sees every region reachable and probed ok; then warm its pool."""

    async def probe() -> None:
        await router.prober.probe_all()
        if down := [r.id for r in router.regions.values() if not (r.reachable and r.probe_ok)]:
            raise RuntimeError(f"{', '.join(down)}: unreachable or failing its health probe")

    await wait_for(
        probe,
        timeout_s=timeout_s,
        what="the router's view of the bench regions",
        hint="a region did not come back after its fault: see its log (the directory is named above)",
    )
    router.pool.keep_warm(list(router.regions))
    await asyncio.sleep(0.3)  # let the pool open its warm connections before the next trial


async def _normal(router: Router, prompt: str, max_tokens: int) -> float:
    t0 = time.perf_counter()
    ttfa = None
    async for ev in router.run_turn(SessionRouting(uuid.uuid4().hex), _start(prompt, max_tokens)):
        if isinstance(ev, ClauseAudio) and ttfa is None:
            ttfa = time.perf_counter() - t0
    assert ttfa is not None, "a normal turn produced no audio"
    return ttfa


async def _fault_mid_answer(
    router: Router, procs: dict[str, RegionProcess], sig: signal.Signals, prompt: str, max_tokens: int
) -> Trial:
    trial = Trial()
    t_fail = 0.0
    serving = ""
    async for ev in router.run_turn(SessionRouting(uuid.uuid4().hex), _start(prompt, max_tokens)):
        if isinstance(ev, Routed):
            serving = ev.region
        elif isinstance(ev, ClauseAudio) and not t_fail:
            trial.failed_region = serving
            t_fail = time.perf_counter()
            os.kill(procs[serving].pid, sig)
        elif isinstance(ev, FailedOver) and trial.detect_s is None:
            trial.detect_s = time.perf_counter() - t_fail
        elif isinstance(ev, ClauseAudio) and serving != trial.failed_region and trial.gap_s is None:
            trial.gap_s = time.perf_counter() - t_fail
        elif isinstance(ev, TurnDone):
            trial.completed = ev.status == "completed"
    trial.served_by = serving
    return trial


async def _hang_before_answer(
    router: Router, procs: dict[str, RegionProcess], prompt: str, max_tokens: int
) -> Trial:
    session = SessionRouting(uuid.uuid4().hex)
    victim = router.rank(session)[0][0].id
    trial = Trial(failed_region=victim)
    os.kill(procs[victim].pid, signal.SIGSTOP)
    t_fail = time.perf_counter()
    async for ev in router.run_turn(session, _start(prompt, max_tokens)):
        if isinstance(ev, Routed):
            trial.served_by = ev.region
        elif isinstance(ev, FailedOver) and trial.detect_s is None:
            trial.detect_s = time.perf_counter() - t_fail
        elif isinstance(ev, ClauseAudio) and trial.gap_s is None:
            trial.gap_s = time.perf_counter() - t_fail
        elif isinstance(ev, TurnDone):
            trial.completed = ev.status == "completed"
    return trial


def decision_cost_us(n_regions: int, iterations: int) -> dict[str, float]:
    """Microseconds per ranking over ``n_regions`` (no network: this is the router's own CPU)."""
    registry = Registry(
        regions=[
            RegionRecord(
                id=f"r{i}",
                url=f"http://127.0.0.1:{20000 + i}",
                location=Location(40 + i % 20, -70 + i * 7),
                residency=["eu" if i % 2 else "us"],
            )
            for i in range(n_regions)
        ]
    )
    router = Router(RouterSettings(probe_interval_s=0), registry=registry)
    for i, r in enumerate(router.regions.values()):
        r.observe_ttfa(0.5 + (i % 7) / 10)
    out: dict[str, float] = {}
    for label, session in (
        ("any", SessionRouting("s")),
        ("residency", SessionRouting("s", residency=frozenset({"eu"}))),
    ):
        for _ in range(200):
            router.rank(session)
        t0 = time.perf_counter()
        for _ in range(iterations):
            router.rank(session)
        out[f"{n_regions} regions, {label}"] = (time.perf_counter() - t0) / iterations * 1e6
    return out


async def run_bench(
    regions: Sequence[RegionProcess],
    *,
    trials: int,
    prompt: str,
    max_tokens: int,
    report: Callable[[str], None],
) -> BenchResult:
    result = BenchResult()
    procs = {r.id: r for r in regions}
    settings, registry = bench_settings(regions)
    async with Router(settings, registry=registry) as router:
        await _wait_all_ready(router)
        report(f"normal turns ({trials})")
        await _normal(router, prompt, max_tokens)  # warm-up, not counted
        for _ in range(trials):
            result.normal_ttfa_s.append(await _normal(router, prompt, max_tokens))
        for label, sig, bucket in (
            ("crash (SIGKILL mid-answer)", signal.SIGKILL, result.crash),
            ("hang (SIGSTOP mid-answer)", signal.SIGSTOP, result.hang_mid),
        ):
            for i in range(trials):
                report(f"{label}: trial {i + 1}/{trials}")
                trial = await _fault_mid_answer(router, procs, sig, prompt, max_tokens)
                bucket.append(trial)
                await _recover(procs[trial.failed_region], sig)
                await _wait_all_ready(router)
        for i in range(trials):
            report(f"hang before the answer (SIGSTOP, first-byte deadline): trial {i + 1}/{trials}")
            trial = await _hang_before_answer(router, procs, prompt, max_tokens)
            result.hang_first_byte.append(trial)
            await _recover(procs[trial.failed_region], signal.SIGSTOP)
            await _wait_all_ready(router)
    for n in (3, 50):
        result.decision_us.update(decision_cost_us(n, 20_000))
    return result


async def _recover(proc: RegionProcess, sig: signal.Signals) -> None:
    if sig == signal.SIGSTOP:
        os.kill(proc.pid, signal.SIGCONT)
    else:
        await proc.restart()


def summarize(result: BenchResult) -> str:
    def row(name: str, values: list[float]) -> str:
        if not values:
            return f"{name:<44} (no samples)"
        return (
            f"{name:<44} p50 {pct(values, 50) * 1000:7.0f} ms   p95 {pct(values, 95) * 1000:7.0f} ms"
            f"   (n={len(values)})"
        )

    lines = ["Router failover (text turns, 2 local regions on CPU)", ""]
    lines.append(row("normal time to first audio", result.normal_ttfa_s))
    for name, trials in (
        ("crash mid-answer (SIGKILL)", result.crash),
        ("hang mid-answer (SIGSTOP)", result.hang_mid),
        ("hang before answer (SIGSTOP)", result.hang_first_byte),
    ):
        gaps = [t.gap_s for t in trials if t.gap_s is not None]
        detects = [t.detect_s for t in trials if t.detect_s is not None]
        done = sum(t.completed for t in trials)
        lines.append(row(f"{name}: gap to new audio", gaps))
        lines.append(row(f"{name}: detection", detects))
        lines.append(f"{'':<44} completed {done}/{len(trials)} turns")
    if result.normal_ttfa_s and result.crash:
        gaps = [t.gap_s for t in result.crash if t.gap_s is not None]
        if gaps:
            ratio = statistics.median(gaps) / statistics.median(result.normal_ttfa_s)
            lines.append(f"crash gap / normal TTFA (p50): {ratio:.2f}")
    lines += ["", "Routing decision (rank all regions, in-process)"]
    for k, v in result.decision_us.items():
        lines.append(f"  {k:<30} {v:8.1f} µs")
    return "\n".join(lines)
