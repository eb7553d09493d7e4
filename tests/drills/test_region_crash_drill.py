"""CI's drill: `region-crash` against the real local deployment (Terraform regions + edge).

Two callers speak real speech for three turns each; when the first answer audio of turn 2 reaches
a caller, the busiest region's process is SIGKILLed mid-answer, then restored by Terraform. The
drill must lose no turn, record the failover, and write a report whose content says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from infra.drills.callers import CallerSettings
from infra.drills.deployment import Deployment
from infra.drills.report import write_report
from infra.drills.runner import run_drill
from infra.drills.scenarios import SCENARIOS, FaultParams
from infra.drills.slo import Slo


async def test_region_crash_drill_loses_no_turn(drill_deployment: Deployment, tmp_path: Path) -> None:
    regions = [r.id for r in drill_deployment.regions()]
    assert len(regions) == 2
    result = await run_drill(
        SCENARIOS["region-crash"],
        drill_deployment,
        callers=2,
        caller_settings=CallerSettings(turns=3, turn_timeout_s=90),
        params=FaultParams(at_turn=2, hold_s=2.0),
        # Bounds for a shared 2-core CI box; docs/drills.md shows the defaults on a quiet one.
        slo=Slo(max_lost_turns=0, max_failover_gap_s=15.0, max_fault_p95_ttfa_s=45.0),
        speech_dir=tmp_path / "speech",
        report=print,
        max_duration_s=420,
    )
    files = write_report(
        result, tmp_path / "report", command="voicemesh drill region-crash --callers 2 --turns 3"
    )
    data = json.loads(files["json"].read_text())
    print(files["md"].read_text())

    assert data["callers"] == 2 and len(data["turns"]) == 6
    assert data["stats"]["lost"] == 0, [t for t in data["turns"] if not t["complete"]]
    [fault] = data["faults"]
    assert fault["kind"] == "SIGKILL" and fault["region"] in regions
    assert fault["until"] is not None  # Terraform brought the region back within the drill
    # The turn playing when the region died moved on (to the other region, or the edge voice when
    # the other is too slow) and was heard to the end; the router's log dates and explains it.
    moved = [t for t in data["turns"] if any(f["from"] == fault["region"] for f in t["failovers"])]
    assert moved, f"no failover from {fault['region']} recorded: {[t['failovers'] for t in data['turns']]}"
    assert all(f["reason"] and f["at"] >= fault["at"] - 0.5 for f in moved[0]["failovers"])
    served = data["stats"]["served_by"]
    assert set(served) <= {*regions, "edge (degraded)"} and sum(served.values()) == 6
    assert {v["name"]: v["passed"] for v in data["verdicts"]} == {
        "lost_turns": True,
        "failover_gap": True,
        "fault_p95_ttfa": True,
    }
    assert data["passed"] is True
    for t in data["turns"]:
        assert t["ttfa_s"] is not None and t["ttfa_s"] > 0 and t["audio_s"] > 0.3
    md = files["md"].read_text()
    assert "# Drill `region-crash`: passed" in md and "**SIGKILL**" in md
    assert files["png"].stat().st_size > 20_000

    # Every fault was undone: both regions answer /health again.
    for region in drill_deployment.regions():
        assert await drill_deployment.region_health(region, timeout_s=5) is not None, region
