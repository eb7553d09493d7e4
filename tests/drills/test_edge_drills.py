"""The edge drills end to end: `edge-crash`, `edge-drain` and `redis-down` against two real edge
processes sharing a real redis-server behind a loopback balancer (``voicemesh/drills/edges.py``),
in front of a real region (real vLLM, Whisper, Piper), with real speech from the drill callers.

Each drill must lose no turn and no conversation item: callers dropped by an edge resume their
session on the other edge (``docs/resume.md``): every scenario drops someone, who resumes. The
timing objectives are ``BUSY_MACHINE_SLO``'s (tests/fixtures/drills.py: bounds a shared 2-core
machine keeps, from the gaps the drills measure). The reports are written to the test's folder, and with
``VOICEMESH_DRILL_DOCS=docs/drills`` also to ``docs/drills/<scenario>.md`` + ``.png`` (how the
published edge drill reports are made).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.fixtures.drills import BUSY_MACHINE_SLO, run_suite_drill
from tests.fixtures.region import RunningRegion
from voicemesh.drills.caller_state import EdgeTarget
from voicemesh.drills.deployment import Deployment
from wire.region_auth import ClientAuth

KEY, ADMIN = "vm-edge-drill-key", "vma-edge-drill-admin"


@pytest.fixture
def regions_only(tmp_path: Path, region: RunningRegion, region_keys: Path) -> Deployment:
    """The region tier only (the test's real region in a registry file): the drill brings its edges."""
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"regions": [{"id": region.id, "url": region.url, "capacity": 2}]}))
    return Deployment(
        EdgeTarget("http://127.0.0.1:9", KEY, ADMIN),  # unused: the edge drills use their fleet
        registry,
        region_keys_path=region_keys,
        region_auth=ClientAuth.from_paths(region_keys),
    )


@pytest.mark.parametrize(
    ("scenario", "faults"),
    [
        ("edge-crash", ["SIGKILL"]),
        ("edge-drain", ["SIGTERM", "SIGTERM"]),  # a rolling restart: each edge drained in turn
        ("redis-down", ["redis-down", "SIGKILL"]),  # once Redis is back, an edge is killed: resume
    ],
)
async def test_edge_drill_loses_no_turn_and_no_item(
    regions_only: Deployment, tmp_path: Path, scenario: str, faults: list[str]
) -> None:
    run = await run_suite_drill(
        scenario, regions_only, tmp_path, turn_timeout_s=120, hold_s=3.0, max_duration_s=480
    )
    files, data = run.files, run.data

    assert len(data["turns"]) == 6
    assert data["stats"]["lost"] == 0, [t for t in data["turns"] if not t["complete"]]
    assert [f["kind"] for f in data["faults"]] == faults, (data["faults"], data["notes"])
    assert all(f["until"] is not None for f in data["faults"]), data["faults"]  # every fault undone
    verdicts = {v["name"]: v for v in data["verdicts"]}
    assert set(verdicts) == {"lost_turns", "failover_gap", "fault_p95_ttfa", "items_lost"}
    assert verdicts["lost_turns"]["measured"] == "0 of 6"
    # Someone was dropped mid-call and resumed, and got every item back.
    items = re.fullmatch(r"0 of (\d+) items, (\d+) resumes", verdicts["items_lost"]["measured"])
    assert items and int(items[1]) > 0 and int(items[2]) > 0, verdicts["items_lost"]
    # The timing objectives are real bounds, met: a turn hit by the fault was answered in time.
    assert (
        verdicts["failover_gap"]["objective"]
        == f"max failover gap <= {BUSY_MACHINE_SLO.max_failover_gap_s:.1f} s"
    )
    assert "turns hit mid-turn" in verdicts["failover_gap"]["measured"], verdicts["failover_gap"]
    assert (
        verdicts["fault_p95_ttfa"]["objective"]
        == f"p95 TTFA during the fault <= {BUSY_MACHINE_SLO.max_fault_p95_ttfa_s:.1f} s"
    )
    assert all(v["passed"] for v in verdicts.values()) and data["passed"] is True, verdicts
    assert files["png"].stat().st_size > 20_000
    if docs := os.environ.get("VOICEMESH_DRILL_DOCS"):
        md = files["md"].read_text().replace("](timeline.png)", f"]({scenario}.png)")
        (Path(docs) / f"{scenario}.md").write_text(md)
        shutil.copyfile(files["png"], Path(docs) / f"{scenario}.png")
