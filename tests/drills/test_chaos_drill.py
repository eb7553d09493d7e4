"""A short chaos drill against the real local deployment (Terraform regions, real vLLM, Whisper,
Piper) with the edge drills' two edges of its own behind the front door, a throwaway redis-server,
and a proxy in front of every region: real faults of three kinds, two of them overlapping.

Seed 9's schedule (a fault-count bound of 3 in a 1.5-minute window): a region hung while the
session store's Redis dies (an edge is then killed and its callers resume), then a region crashed
and restored by Terraform. Two callers talk: the first barges into every third answer, the second
calls a function every turn. Nothing may be lost: no turn, no conversation item, no function call
(nor duplicated), every fault undone, and the report says so; the timing objectives are
``BUSY_MACHINE_SLO``'s (tests/fixtures/drills.py). The report is written to the test's folder, and
with ``VOICEMESH_DRILL_DOCS=docs/drills`` also to ``docs/drills/chaos.md`` + ``.png``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.fixtures.drills import BUSY_MACHINE_SLO
from voicemesh.drills.caller_state import CallerSettings
from voicemesh.drills.chaos import CHAOS_KINDS, ChaosConfig, max_overlap, plan_chaos
from voicemesh.drills.chaos_scenario import chaos_scenario, chaos_turns
from voicemesh.drills.deployment import Deployment
from voicemesh.drills.drill_context import FaultParams
from voicemesh.drills.faults import FaultMark
from voicemesh.drills.report import write_report
from voicemesh.drills.runner import run_drill

KINDS = (
    "region-crash",
    "region-hang",
    "region-slow",
    "region-flap",
    "edge-crash",
    "edge-drain",
    "redis-down",
)
"""Pinned: a kind added to the registry must not change this run's schedule."""
CONFIG = ChaosConfig(seed=9, minutes=1.5, max_faults=3, kinds=KINDS)


def _most_at_once(faults: list[FaultMark]) -> int:
    return max((sum(g.at <= f.at < (g.until or f.at) for g in faults) for f in faults), default=0)


async def test_chaos_drill_loses_nothing(drill_deployment: Deployment, tmp_path: Path) -> None:
    urls = {r.id: r.url for r in drill_deployment.regions()}
    plan = plan_chaos(CONFIG)
    assert [p.kind for p in plan] == ["region-hang", "redis-down", "region-crash"] and max_overlap(plan) == 2
    result = await run_drill(
        chaos_scenario(CONFIG),
        drill_deployment,
        callers=2,
        caller_settings=CallerSettings(turns=chaos_turns(CONFIG), turn_timeout_s=120),
        params=FaultParams(moment_timeout_s=60.0),
        slo=BUSY_MACHINE_SLO,
        speech_dir=tmp_path / "speech",
        report=print,
        max_duration_s=CONFIG.window_s + 300,
    )
    files = write_report(
        result, tmp_path / "report", command="voicemesh drill chaos --minutes 1.5 --seed 9 --max-faults 3"
    )
    data = json.loads(files["json"].read_text())
    print(files["md"].read_text())

    # Every planned fault fired and was undone, marked with its kind; never two on one tier at once.
    schedule = data["settings"]["chaos"]["schedule"]
    assert [s["outcome"] for s in schedule] == ["started"] * 3, (schedule, data["notes"])
    kinds = [f["kind"].split(":")[0] for f in data["faults"]]
    assert {"region-hang", "redis-down", "region-crash"} <= set(kinds), data["faults"]
    assert all(f["until"] is not None for f in data["faults"]), data["faults"]
    marks = [FaultMark(**f) for f in data["faults"]]
    assert _most_at_once(marks) <= 2, data["faults"]
    for tier in ("region", "edge"):
        assert _most_at_once([m for m in marks if CHAOS_KINDS[m.kind.split(":")[0]].tier == tier]) <= 1
    # The callers talked the whole window, with barge-ins and function calls.
    turns = data["turns"]
    assert data["duration_s"] >= CONFIG.window_s
    assert data["stats"]["barged_in"] >= 1 and any(
        t["status"] == "barged_in" for t in turns if t["caller"] == 0
    )
    verdicts = {v["name"]: v for v in data["verdicts"]}
    assert set(verdicts) == {
        "lost_turns", "failover_gap", "fault_p95_ttfa", "calls_lost", "calls_duplicated", "items_lost",
        "longest_silence",
    }  # fmt: skip
    # Nothing lost: turns, items (someone was dropped and resumed), calls.
    assert data["stats"]["lost"] == 0, [t for t in turns if not t["complete"] and t["status"] != "barged_in"]
    assert verdicts["lost_turns"]["measured"] == f"0 of {len(turns)}"
    items = verdicts["items_lost"]["measured"]
    assert items.startswith("0 of ") and not items.endswith(" 0 resumes"), items
    tool_turns = sum(t["caller"] == 1 for t in turns)
    for name in ("calls_lost", "calls_duplicated"):
        assert verdicts[name]["measured"] == f"0 of {tool_turns} tool-calling turns", verdicts[name]
    assert "turns hit mid-turn" in verdicts["failover_gap"]["measured"], verdicts["failover_gap"]
    assert all(v["passed"] for v in verdicts.values()) and data["passed"] is True, verdicts
    md = files["md"].read_text()
    assert "# Drill `chaos`: passed" in md and "Replay: `voicemesh drill chaos --minutes 1.5 --seed 9" in md
    # Everything torn down: both regions answer, and the registry names them again, not a proxy.
    assert {r.id: r.url for r in drill_deployment.regions()} == urls
    for region in drill_deployment.regions():
        assert await drill_deployment.region_health(region, timeout_s=5) is not None, region
    if docs := os.environ.get("VOICEMESH_DRILL_DOCS"):
        (Path(docs) / "chaos.md").write_text(md.replace("](timeline.png)", "](chaos.png)"))
        shutil.copyfile(files["png"], Path(docs) / "chaos.png")
