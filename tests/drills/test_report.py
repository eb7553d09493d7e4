"""Report rendering into real files: JSON content, Markdown tables, a PNG timeline, the live line."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from rich.console import Console

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.console import progress_line, summary_table
from voicemesh.drills.faults import FaultMark
from voicemesh.drills.records import TurnRecord
from voicemesh.drills.report import read_report, render_markdown, write_report
from voicemesh.drills.runner import DrillResult
from voicemesh.drills.slo import Slo, evaluate


def _record(caller: int, n: int, t: float, regions: list[str], **kw: object) -> TurnRecord:
    rec = TurnRecord(caller, n, f"sess{caller}", f"sentence {n}", "en-gb", speech_start=t - 2, speech_end=t)
    for region in regions:
        rec.add_region(region)
    rec.first_audio = t + 1.2
    for i in range(6):
        rec.add_audio(t + 1.2 + i * 0.2, 0.4)
    rec.done, rec.status = t + 3.0, "completed"
    for k, v in kw.items():
        setattr(rec, k, v)
    return rec


def _result() -> DrillResult:
    fault = FaultMark(at=11.5, kind="SIGKILL", region="us-east", detail="pids [123]", until=19.0)
    moved = [{"at": 11.9, "from": "us-east", "to": "eu-west", "reason": "region_disconnected"}]
    records = [
        _record(0, 1, 2.0, ["us-east"]),
        _record(0, 2, 11.0, ["us-east", "eu-west"], failovers=moved),
        _record(1, 1, 3.0, ["eu-west"]),
        _record(1, 2, 12.0, [], degraded=True),
    ]
    lost = TurnRecord(
        1, 3, "sess1", "sentence 3", "en-us", speech_start=16.0, speech_end=18.0, status="timeout", done=40.0
    )
    records.append(lost)
    return DrillResult(
        scenario="region-crash",
        summary="SIGKILL the busiest region mid-answer",
        started="2026-11-22T04:00:00+00:00",
        duration_s=42.0,
        callers=2,
        settings={"turns": 3},
        regions=["eu-west", "us-east"],
        records=records,
        faults=[fault],
        verdicts=evaluate(records, [fault], Slo(), end=42.0),
    )


def test_report_folder_content(tmp_path: Path) -> None:
    result = _result()
    files = write_report(result, tmp_path / "r", command="voicemesh drill region-crash --callers 2")
    data = json.loads(files["json"].read_text())
    assert data["scenario"] == "region-crash" and data["passed"] is False
    assert len(data["turns"]) == 5
    assert data["stats"]["failed_over"] == 1 and data["stats"]["lost"] == 1 and data["stats"]["degraded"] == 1
    assert data["stats"]["served_by"] == {"us-east": 1, "eu-west": 2, "edge (degraded)": 1}
    failed_over = [t for t in data["turns"] if t["failed_over"]]
    assert failed_over[0]["regions"] == ["us-east", "eu-west"] and failed_over[0]["region"] == "eu-west"
    assert {v["name"]: v["passed"] for v in data["verdicts"]} == {
        "lost_turns": False,
        "failover_gap": True,
        "fault_p95_ttfa": True,
    }
    assert data["faults"][0]["kind"] == "SIGKILL" and data["faults"][0]["until"] == 19.0

    md = files["md"].read_text()
    assert md.startswith("# Drill `region-crash`: FAILED")
    assert "Reproduce: `voicemesh drill region-crash --callers 2`" in md
    assert "| lost turns <= 0 | 1 of 5 (caller 1 turn 3: timeout) | **MISSED** |" in md
    assert "| 0 | 2 | en-gb | us-east → eu-west | us-east→eu-west (region_disconnected) | no |" in md
    assert "**lost** (timeout)" in md
    assert "11.5 s → 19.0 s: **SIGKILL** `us-east`" in md
    assert "![timeline](timeline.png)" in md

    # The JSON holds everything: read back, it renders the same Markdown.
    again = read_report(files["json"])
    assert render_markdown(again, "voicemesh drill region-crash --callers 2") == md
    flat = [x for arrival in result.records[1].arrivals for x in arrival]
    assert [x for arrival in again.records[1].arrivals for x in arrival] == pytest.approx(flat, abs=1e-3)

    png = files["png"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = mpimg.imread(png)
    assert image.shape[0] > 200 and image.shape[1] > 800
    # Not a blank canvas: the red fault span, bars and the TTFA line change many pixels.
    assert (image[..., :3].std(axis=(0, 1)) > 0.05).all()


def test_summary_table_and_progress_line() -> None:
    result = _result()
    console = Console(record=True, width=140)
    console.print(summary_table(result))
    text = console.export_text()
    assert "drill region-crash: FAILED" in text
    assert "4 / 1" in text  # completed / lost
    assert "SIGKILL us-east @11.5s" in text
    assert "✗ 1 of 5" in text

    state = CallerState()
    state.records.extend(result.records[:2])
    state.records[1].done = None
    state.records[1].status = "in_progress"
    state.sessions_open = 2
    line = progress_line("region-crash", state, result.faults)
    assert "sessions 2" in line and "turns done 1" in line and "in flight 1" in line
    assert "failed over 1" in line and "fault: SIGKILL us-east @ 11.5s" in line
