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
        slo=Slo(max_lost_turns=0, max_failover_gap_s=10.0, max_fault_p95_ttfa_s=20.0),
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
    # The turn playing when the region died moved to the other region and finished there.
    moved = [t for t in data["turns"] if t["failed_over"]]
    assert moved, "no failover recorded"
    assert moved[0]["regions"][0] == fault["region"] and moved[0]["region"] in set(regions) - {
        fault["region"]
    }
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
