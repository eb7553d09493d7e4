"""The fuzzers together: which run against which target, the shared budget, the health checks
before and after, and the summary ``voicemesh fuzz`` prints."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hypothesis import strategies as st

from voicemesh.fuzz import events, health, http, turns
from voicemesh.fuzz.oracle import OracleFailure
from voicemesh.fuzz.runner import Failure, Outcome, run_fuzzer, show
from voicemesh.fuzz.target import EdgeTarget, RegionTarget

FUZZERS = ("events", "http", "turns")
"""``events`` and ``http`` need an edge, ``turns`` a region."""


class NotServing(Exception):
    """The target failed its health check before any fuzz was sent: nothing to learn from fuzzing."""


@dataclass
class Report:
    seed: int
    outcomes: list[Outcome] = field(default_factory=list)
    unhealthy: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Failure]:
        return [f for o in self.outcomes for f in o.failures] + self.unhealthy

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [f"voicemesh fuzz --seed {self.seed}: {self.seconds:.0f} s"]
        lines += [f"  {o.fuzzer:<7} {o.cases:>5} inputs  {len(o.failures)} failure(s)" for o in self.outcomes]
        for n, failure in enumerate(self.failures, 1):
            lines.append(f"FAIL {n} [{failure.fuzzer}] {failure.kind}: {failure.detail}")
            if failure.reproducer:
                lines.append(f"  minimal reproducer: {failure.reproducer}")
        lines.append("ok: no hang, no 5xx, no server_error; healthy afterwards" if self.ok else
                     f"{len(self.failures)} failure(s): rerun with --seed {self.seed} to replay")  # fmt: skip
        return "\n".join(lines)


def run(
    *,
    edge: EdgeTarget | None,
    region: RegionTarget | None,
    fuzzers: tuple[str, ...] = FUZZERS,
    cases: int = 200,
    seconds: float = 60.0,
    seed: int = 0,
    timeout_s: float = 10.0,
    report: Callable[[str], None] = lambda _: None,
) -> Report:
    """Each fuzzer in turn, ``cases`` each, the whole run within about ``seconds`` (plus shrinking
    and the last cases' timeouts). Raises ``NotServing`` when a target is unhealthy before the fuzz."""
    checks: list[tuple[str, Callable[[], None]]] = []
    plan: list[tuple[str, st.SearchStrategy[Any], Callable[[Any], None], Callable[[Any], str]]] = []
    if edge is not None:
        checks.append((f"edge {edge.url}", partial(health.check_edge, edge, timeout_s)))
        plan.append(
            ("events", events.event_cases, partial(events.run_events_case, edge, timeout_s=timeout_s), show)
        )
        http_case = partial(http.run_http_case, edge, timeout_s=timeout_s)
        plan.append(("http", http.requests(edge.api_key), http_case, http.describe))
    if region is not None:
        checks.append((f"region {region.url}", partial(health.check_region, region, timeout_s)))
        plan.append(
            ("turns", turns.turn_cases, partial(turns.run_turns_case, region, timeout_s=timeout_s), show)
        )
    plan = [step for step in plan if step[0] in fuzzers]
    for what, check in checks:
        try:
            check()
        except OracleFailure as exc:
            raise NotServing(f"{what} is not serving before the fuzz: {exc.detail}") from None
    result = Report(seed)
    began = time.monotonic()
    for n, (name, strategy, run_case, describe) in enumerate(plan):
        share = (seconds - (time.monotonic() - began)) / (len(plan) - n)
        report(f"fuzzing {name}: up to {cases} cases in {max(share, 0):.0f} s (seed {seed})")
        deadline = time.monotonic() + share
        outcome = run_fuzzer(
            name, strategy, run_case, cases=cases, deadline=deadline, seed=seed, describe=describe
        )
        result.outcomes.append(outcome)
    for what, check in checks:
        report(f"checking {what} still serves")
        try:
            check()
        except OracleFailure as exc:
            result.unhealthy.append(Failure("health", exc.kind, f"{what}: {exc.detail}", ""))
    result.seconds = time.monotonic() - began
    return result
