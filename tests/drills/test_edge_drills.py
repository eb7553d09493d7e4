"""The edge drills end to end: `edge-crash`, `edge-drain` and `redis-down` against two real edge
processes sharing a real redis-server behind a loopback balancer (``voicemesh/drills/edges.py``),
in front of a real region (real vLLM, Whisper, Piper), with real speech from the drill callers.

Each drill must lose no turn and no conversation item: callers dropped by an edge resume their
session on the other edge (``docs/resume.md``). As in the region drills' test, the SLO's timing
bounds are off (a shared 2-core machine); the reports are written to the test's folder, and with
``VOICEMESH_DRILL_DOCS=docs/drills`` also to ``docs/drills/<scenario>.md`` + ``.png`` (how the
published edge drill reports are made).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.fixtures.region import RunningRegion
from voicemesh.drills.caller_state import CallerSettings, EdgeTarget
from voicemesh.drills.deployment import Deployment
from voicemesh.drills.drill_context import FaultParams
from voicemesh.drills.report import write_report
from voicemesh.drills.runner import run_drill
from voicemesh.drills.scenarios import SCENARIOS
from voicemesh.drills.slo import Slo
from wire.region_auth import ClientAuth

pytestmark = pytest.mark.slow

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
    ("scenario", "fault"),
    [("edge-crash", "SIGKILL"), ("edge-drain", "SIGTERM"), ("redis-down", "redis-down")],
)
async def test_edge_drill_loses_no_turn_and_no_item(
    regions_only: Deployment, tmp_path: Path, scenario: str, fault: str
) -> None:
    result = await run_drill(
        SCENARIOS[scenario],
        regions_only,
        callers=2,
        caller_settings=CallerSettings(turns=3, turn_timeout_s=120),
        params=FaultParams(at_turn=2, hold_s=3.0),
        slo=Slo(max_lost_turns=0, max_failover_gap_s=math.inf, max_fault_p95_ttfa_s=math.inf),
        speech_dir=tmp_path / "speech",
        report=print,
        max_duration_s=480,
    )
    files = write_report(
        result, tmp_path / "report", command=f"voicemesh drill {scenario} --callers 2 --turns 3"
    )
    data = json.loads(files["json"].read_text())
    print(files["md"].read_text())

    assert len(data["turns"]) == 6
    assert data["stats"]["lost"] == 0, [t for t in data["turns"] if not t["complete"]]
    assert data["faults"] and data["faults"][0]["kind"] == fault
    assert all(f["until"] is not None for f in data["faults"]), data["faults"]  # every fault undone
    verdicts = {v["name"]: v for v in data["verdicts"]}
    assert verdicts["lost_turns"]["measured"] == "0 of 6"
    assert verdicts["items_lost"]["measured"].startswith("0 of ")
    if scenario != "redis-down" or len(data["faults"]) > 1:
        assert " 0 resumes" not in verdicts["items_lost"]["measured"]  # someone was dropped and resumed
    assert all(v["passed"] for v in verdicts.values()), verdicts
    assert files["png"].stat().st_size > 20_000
    if docs := os.environ.get("VOICEMESH_DRILL_DOCS"):
        md = files["md"].read_text().replace("](timeline.png)", f"]({scenario}.png)")
        (Path(docs) / f"{scenario}.md").write_text(md)
        shutil.copyfile(files["png"], Path(docs) / f"{scenario}.png")
