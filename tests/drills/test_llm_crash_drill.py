"""CI's drill: `llm-crash` against a real local deployment whose vLLM Terraform started and
supervises (`voicemesh up --detach`, no `--llm-url`: two regions share that one vLLM, as
`voicemesh up` runs them by default).

Two callers speak real speech for three turns each; after the first words of turn 2's answer reach
a caller, the vLLM is SIGKILLed as soon as a region's `/health` says it is writing an answer
(mid-answer). Both regions lose their model at once: each must say so in its `/health` (`llm_down`
with the reason), the turn in flight must fail over from the region (an `llm_error`, a region error)
and be finished by the edge's own voice, no turn may be lost and no function call lost or repeated,
and once Terraform has restarted vLLM both regions must be ready again (the drill waits for it: the
fault's end).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.drills import as_drill_target, run_suite_drill
from tests.fixtures.infra import LocalDeployment
from voicemesh.drills.deployment import Deployment


@pytest.fixture(scope="module")
def target(own_llm_deployment: LocalDeployment) -> Iterator[Deployment]:
    yield as_drill_target(own_llm_deployment)


async def test_llm_crash_drill_loses_no_turn_and_recovers(target: Deployment, tmp_path: Path) -> None:
    regions = [r.id for r in target.regions()]
    assert len(regions) == 2
    run = await run_suite_drill(
        "llm-crash", target, tmp_path, turn_timeout_s=120, hold_s=2.0, max_duration_s=900
    )
    files, data = run.files, run.data

    assert data["callers"] == 2 and len(data["turns"]) == 6
    assert data["stats"]["lost"] == 0, [t for t in data["turns"] if not t["complete"]]
    [fault] = data["faults"]
    assert fault["kind"] == "SIGKILL LLM" and fault["region"] in regions
    # Killed while the region's /health said its LLM was writing (not after the answer was all written).
    detail = fault["detail"]
    assert "while it wrote for " in detail and f"turn(s) of {fault['region']}" in detail, fault
    assert fault["until"] is not None  # restarted by Terraform, and both regions ready again
    notes = " ".join(data["notes"])
    for region in regions:  # each said why it was not ready
        assert f"{region} /health after the SIGKILL: 503 llm_down: the LLM does not answer: LLM at " in notes
    assert "recovery: the LLM at " in notes and f"{', '.join(sorted(regions))} said ready" in notes
    # The turn in flight left the region whose LLM died and, no region having a model, ended at the
    # edge (which finishes what was heard), complete; the turns after it were the edge voice's.
    moved = [t for t in data["turns"] if any(f["from"] == fault["region"] for f in t["failovers"])]
    assert moved, f"no failover from {fault['region']}: {[t['failovers'] for t in data['turns']]}"
    assert moved[0]["complete"] and moved[0]["failovers"][-1]["to"] == "edge", moved[0]["failovers"]
    assert all(hop["reason"] for hop in moved[0]["failovers"]), moved[0]["failovers"]
    assert data["stats"]["degraded"] >= 1
    verdicts = {v["name"]: v for v in data["verdicts"]}
    assert verdicts["lost_turns"]["measured"] == "0 of 6"
    assert verdicts["calls_lost"]["passed"] and verdicts["calls_duplicated"]["passed"], verdicts
    assert data["passed"] is True, verdicts
    assert "# Drill `llm-crash`: passed" in files["md"].read_text()

    # The fault was undone: both regions answer turns again (ready: their LLM back and warm).
    for info in target.regions():
        health = await target.region_health(info, timeout_s=5)
        assert health is not None and health["status"] == "ready", (info, health)
