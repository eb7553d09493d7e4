"""The chaos drill as a scenario (``voicemesh drill chaos``): its schedule, its callers, its own
objective (the longest silence), and its part of the report (the seed and every fault as played).

Callers: two at least, the last calling a function every turn, the others barging into every
third answer; the edge drills' two edges behind the front door with a throwaway Redis, and a
proxy in front of every region (``runner.run_drill`` sets them up from the scenario's fields).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from typing import Any

from voicemesh.drills.chaos import ChaosConfig, ChaosRun, plan_chaos, run_chaos
from voicemesh.drills.records import TurnRecord
from voicemesh.drills.scenarios import Scenario
from voicemesh.drills.slo import Slo, Verdict

BARGE_IN_EVERY = 3
TURN_S = 6.0
"""A turn's shortest length (speech, answer, listening) on any machine: sizes the callers' turns."""


def chaos_turns(config: ChaosConfig) -> int:
    """Turns per caller: more than fit in the window (callers hang up when it is over)."""
    return int(config.window_s / TURN_S) + 2


def silence_verdict(records: Sequence[TurnRecord], slo: Slo) -> list[Verdict]:
    """The longest a caller heard nothing, fault or not, held to the failover gap's bound."""
    worst = max(records, key=lambda r: r.longest_silence_s, default=None)
    if worst is None:
        return [Verdict("longest_silence", "longest silence measured", "no turn", False)]
    value = worst.longest_silence_s
    return [
        Verdict(
            "longest_silence",
            f"longest silence <= {slo.max_failover_gap_s:.1f} s",
            f"{value:.2f} s (caller {worst.caller} turn {worst.turn})",
            value <= slo.max_failover_gap_s,
        )
    ]


def chaos_scenario(config: ChaosConfig) -> Scenario:
    run = ChaosRun(config, plan_chaos(config))

    def extra() -> dict[str, Any]:
        played = [{**asdict(p), "outcome": o} for p, o in zip(run.plan, run.outcomes, strict=False)]
        return {"chaos": {**asdict(config), "window_s": config.window_s, "schedule": played}}

    return Scenario(
        "chaos",
        f"random faults of {len(config.kinds)} kinds for {config.minutes:g} min (seed {config.seed}),"
        f" {len(run.plan)} planned, at most {config.max_overlap} at once",
        partial(run_chaos, run=run),
        needs_proxies=True,
        tool_callers=1,
        edges=2,
        barge_in_every=BARGE_IN_EVERY,
        verdicts=silence_verdict,
        report_extra=extra,
    )


def chaos_markdown(settings: dict[str, Any]) -> list[str]:
    """The report's chaos section: how to replay the run, and the schedule as played."""
    chaos = settings.get("chaos")
    if not chaos:
        return []
    out = [
        "",
        "## Chaos schedule",
        "",
        f"Seed **{chaos['seed']}**, window {chaos['window_s']:.0f} s, at most {chaos['max_faults']} faults,"
        f" {chaos['max_overlap']} at once. Replay: `voicemesh drill chaos --minutes {chaos['minutes']:g}"
        f" --seed {chaos['seed']} --max-faults {chaos['max_faults']}`",
        "",
        "| kind | planned at | hold | outcome |",
        "|---|---|---|---|",
    ]
    out += [
        f"| {p['kind']} | {p['at_s']:.1f} s | {p['hold_s']:.1f} s | {p['outcome']} |"
        for p in chaos["schedule"]
    ]
    return out
