"""The chaos drill's parts that need no deployment: the seeded schedule, its bounds and overlap
rules, the rules held at run time, the longest-silence objective and the report's chaos section.

``test_run_chaos_holds_the_rules_at_run_time`` plays a schedule with stand-in faults (asyncio sleeps
that record when they run) in place of the registry's real ones: what it checks is the scheduler's
(slots, one fault per tier, the window, the callers told to hang up), not a fault; the real faults
run in ``test_chaos_drill.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import voicemesh.cli.drill  # noqa: F401  (registers `voicemesh drill`)
from voicemesh.cli.common import cli
from voicemesh.drills import chaos
from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.chaos import (
    CHAOS_KINDS,
    ChaosConfig,
    ChaosKind,
    ChaosRun,
    PlannedFault,
    max_overlap,
    plan_chaos,
    run_chaos,
)
from voicemesh.drills.chaos_scenario import chaos_scenario, chaos_turns, silence_verdict
from voicemesh.drills.drill_context import DrillContext, FaultParams
from voicemesh.drills.faults import Undo
from voicemesh.drills.records import TurnRecord
from voicemesh.drills.report import read_report, write_report
from voicemesh.drills.runner import DrillResult
from voicemesh.drills.slo import Slo


def _tier_overlaps(plan: list[PlannedFault]) -> list[tuple[str, str]]:
    return [
        (p.kind, q.kind)
        for i, p in enumerate(plan)
        for q in plan[i + 1 :]
        if CHAOS_KINDS[p.kind].tier == CHAOS_KINDS[q.kind].tier and q.at_s < p.at_s + p.hold_s
    ]


@pytest.mark.parametrize("seed", [1, 7, 42, 2026])
def test_plan_is_seeded_bounded_and_never_overlaps_a_tier(seed: int) -> None:
    config = ChaosConfig(seed=seed, minutes=20)
    plan = plan_chaos(config)
    assert plan == plan_chaos(ChaosConfig(seed=seed, minutes=20))  # a seed replays its schedule
    assert plan != plan_chaos(ChaosConfig(seed=seed + 1, minutes=20))
    assert {p.kind for p in plan[: len(CHAOS_KINDS)]} == set(CHAOS_KINDS)  # every kind, first
    assert len(plan) <= config.max_faults
    assert all(config.warmup_s <= p.at_s < config.window_s for p in plan)
    assert [p.at_s for p in plan] == sorted(p.at_s for p in plan)
    assert all(3.0 <= p.hold_s <= 10.0 for p in plan)
    assert max_overlap(plan) == 2  # they do overlap, two at most
    assert _tier_overlaps(plan) == []  # so never every region nor every edge out at once


def test_plan_is_bounded_by_count_and_by_window() -> None:
    assert len(plan_chaos(ChaosConfig(seed=3, minutes=20, max_faults=3))) == 3
    short = plan_chaos(ChaosConfig(seed=3, minutes=0.5))
    assert short and all(p.at_s < 30.0 for p in short)
    assert plan_chaos(ChaosConfig(seed=3, minutes=0.2)) == []  # the window ends before the warm-up


def test_plan_rejects_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown chaos fault kinds \\['meteor'\\]: known are region-crash"):
        plan_chaos(ChaosConfig(seed=1, minutes=1, kinds=("region-crash", "meteor")))


async def test_run_chaos_holds_the_rules_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    running: list[str] = []
    most: list[int] = [0]
    seen: list[tuple[str, float]] = []

    async def fake(ctx: DrillContext) -> None:
        tier = CHAOS_KINDS[ctx.label].tier if isinstance(ctx, chaos.ChaosContext) else "?"
        running.append(tier)
        most[0] = max(most[0], len(running))
        assert running.count(tier) == 1, running  # one fault per tier at once
        seen.append((ctx.label if isinstance(ctx, chaos.ChaosContext) else "", ctx.params.hold_s))
        i = ctx.mark("fake", tier)
        await asyncio.sleep(ctx.params.hold_s * 10)  # longer than planned: the rules still hold
        ctx.end(i)
        running.remove(tier)

    kinds = {k: ChaosKind(k, fake, CHAOS_KINDS[k].tier) for k in CHAOS_KINDS}
    monkeypatch.setattr(chaos, "CHAOS_KINDS", kinds)
    config = ChaosConfig(
        seed=5, minutes=0.01, max_faults=6, warmup_s=0.0, hold_s=(0.05, 0.1), gap_s=(0.0, 0.02)
    )
    run = ChaosRun(config, plan_chaos(config))
    assert len(run.plan) == 6
    state = CallerState()
    ctx = DrillContext(None, state, FaultParams(), Undo(), lambda _m: None)  # type: ignore[arg-type]
    await asyncio.wait_for(run_chaos(ctx, run), 10)
    assert most[0] == 2 and not running
    assert state.stopping is True  # the callers hang up after the window
    assert run.outcomes.count("started") == len(seen) and set(run.outcomes) <= {"started", "skipped"}
    assert (
        "skipped" in run.outcomes
    )  # a tier's third fault starts after 2 x 0.5 s > the window: skipped, noted
    assert any("skipped: the window ended first" in n for n in ctx.notes)
    assert all(f.kind.endswith(": fake") and f.until is not None for f in ctx.faults)
    started = [(p.kind, p.hold_s) for p, o in zip(run.plan, run.outcomes, strict=True) if o == "started"]
    assert sorted(seen) == sorted(started)  # each with its own planned hold


def _turn(caller: int, turn: int, speech_end: float, first_audio: float | None, **kw: object) -> TurnRecord:
    rec = TurnRecord(caller, turn, "s", "hello", "en-us", speech_start=speech_end - 1, speech_end=speech_end)
    rec.first_audio = first_audio
    if first_audio is not None:
        rec.add_audio(first_audio, 1.0)
        rec.add_audio(first_audio + 3.0, 1.0)  # 2 s of silence mid-answer
    rec.done, rec.status = speech_end + 9, "completed"
    for k, v in kw.items():
        setattr(rec, k, v)
    return rec


def test_longest_silence_counts_the_wait_and_a_barge_in_is_not_lost() -> None:
    fast, slow = _turn(0, 1, 10.0, 11.0), _turn(1, 1, 10.0, 16.5)
    barged = _turn(0, 2, 30.0, 31.0, status="barged_in")
    assert fast.longest_silence_s == pytest.approx(2.0) and slow.longest_silence_s == pytest.approx(6.5)
    assert barged.barged_in and not barged.lost and not barged.complete
    [v] = silence_verdict([fast, slow, barged], Slo(max_failover_gap_s=6.0))
    assert (v.passed, v.measured) == (False, "6.50 s (caller 1 turn 1)")
    assert silence_verdict([fast, barged], Slo(max_failover_gap_s=6.0))[0].passed


def test_chaos_report_has_the_seed_the_schedule_and_the_counts(tmp_path: Path) -> None:
    config = ChaosConfig(seed=11, minutes=2, max_faults=4)
    scenario = chaos_scenario(config)
    assert scenario.edges == 2 and scenario.tool_callers == 1 and scenario.needs_proxies
    assert chaos_turns(config) == 22
    assert scenario.report_extra is not None and scenario.verdicts is not None
    records = [_turn(0, 1, 10.0, 11.0), _turn(0, 2, 30.0, 31.0, status="barged_in")]
    result = DrillResult(
        "chaos", scenario.summary, "2026-11-28T12:00:00+00:00", 130.0, 2,
        {"turns": 22, **scenario.report_extra()}, ["eu-west", "us-east"], records, [],
        scenario.verdicts(records, Slo()),
    )  # fmt: skip
    files = write_report(result, tmp_path / "r")
    data = json.loads(files["json"].read_text())
    schedule = data["settings"]["chaos"]["schedule"]
    assert [s["kind"] for s in schedule] == [p.kind for p in plan_chaos(config)]
    assert {s["outcome"] for s in schedule} == {"planned"}
    assert data["stats"]["barged_in"] == 1 and data["stats"]["lost"] == 0
    assert data["stats"]["longest_silence_s"] == pytest.approx(2.0)
    md = files["md"].read_text()
    assert "Replay: `voicemesh drill chaos --minutes 2 --seed 11 --max-faults 4`" in md
    assert f"| {schedule[0]['kind']} | {schedule[0]['at_s']:.1f} s |" in md
    assert "| turns total / completed / barged in / lost | 2 / 1 / 1 / 0 |" in md
    assert "| 0 | 2 | en-us |" in md and "barged in |" in md
    assert read_report(files["json"]).settings["chaos"]["seed"] == 11


@pytest.mark.parametrize("args", [["--minutes", "0"], ["--max-faults", "0"]])
def test_cli_refuses_an_empty_chaos_run(args: list[str]) -> None:
    result = CliRunner().invoke(cli, ["drill", "chaos", *args])
    assert result.exit_code == 1
    assert "--minutes must be > 0 and --max-faults >= 1" in result.output
