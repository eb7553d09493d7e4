"""A drill's or a load run's report folder: JSON (everything, per turn), Markdown, and a PNG.

The folder holds ``report.json`` (everything, per turn), ``report.md`` (for people and the docs)
and ``timeline.png`` (``voicemesh.drills.timeline``); a load run's holds ``load.json``,
``load.md`` and ``load.png``. ``read_report`` turns a ``report.json`` back into a result.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from voicemesh.drills.chaos_scenario import chaos_markdown
from voicemesh.drills.faults import FaultMark
from voicemesh.drills.records import record_from_json
from voicemesh.drills.runner import DrillResult, LoadStep
from voicemesh.drills.slo import Verdict
from voicemesh.drills.timeline import render_load_chart, render_timeline


def fmt_s(value: float | None, unit: str = "s") -> str:
    return "—" if value is None else f"{value:.2f} {unit}"


def to_json(result: DrillResult) -> dict[str, Any]:
    return {
        "scenario": result.scenario,
        "summary": result.summary,
        "started": result.started,
        "duration_s": result.duration_s,
        "callers": result.callers,
        "settings": result.settings,
        "regions": result.regions,
        "passed": result.passed,
        "stats": result.stats(),
        "verdicts": [v.to_json() for v in result.verdicts],
        "faults": [asdict(f) for f in result.faults],
        "turns": [r.to_json() for r in result.records],
        "notes": result.notes,
    }


def read_report(path: Path) -> DrillResult:
    """A drill's ``report.json`` back as a result, e.g. to render it again."""
    data = json.loads(path.read_text())
    return DrillResult(
        scenario=data["scenario"],
        summary=data["summary"],
        started=data["started"],
        duration_s=data["duration_s"],
        callers=data["callers"],
        settings=data["settings"],
        regions=data["regions"],
        records=[record_from_json(t) for t in data["turns"]],
        faults=[FaultMark(**f) for f in data["faults"]],
        verdicts=[Verdict(**v) for v in data["verdicts"]],
        notes=data.get("notes", []),
    )


def _fault_line(f: FaultMark) -> str:
    span = f"{f.at:.1f} s" + (f" → {f.until:.1f} s" if f.until is not None else "")
    return f"- {span}: **{f.kind}** `{f.region}` {f.detail}"


def render_markdown(result: DrillResult, command: str = "") -> str:
    s = result.stats()
    out = [
        f"# Drill `{result.scenario}`: {'passed' if result.passed else 'FAILED'}",
        "",
        f"{result.summary}. Started {result.started}, ran {result.duration_s:.1f} s; "
        f"{result.callers} callers x {result.settings['turns']} turns; regions: {', '.join(result.regions)}.",
    ]
    if command:
        out += ["", f"Reproduce: `{command}`"]
    out += ["", "## Service-level objectives", "", "| objective | measured | verdict |", "|---|---|---|"]
    out += [
        f"| {v.objective} | {v.measured} | {'pass' if v.passed else '**MISSED**'} |" for v in result.verdicts
    ]
    out += ["", "## Summary", "", "| measure | value |", "|---|---|"]
    out += [
        f"| turns total / completed / barged in / lost | {s['turns']} / {s['completed']} / "
        f"{s.get('barged_in', 0)} / {s['lost']} |",
        f"| failed over / degraded / queued | {s['failed_over']} / {s['degraded']} / {s['queued']} |",
        f"| served by | {', '.join(f'{k}: {v}' for k, v in sorted(s['served_by'].items())) or '—'} |",
        f"| TTFA p50 / p95 / p99 | {fmt_s(s['ttfa_p50_s'])} / {fmt_s(s['ttfa_p95_s'])} / "
        f"{fmt_s(s['ttfa_p99_s'])} |",
        f"| max audible gap / longest silence | {fmt_s(s['max_audible_gap_s'])} / "
        f"{fmt_s(s.get('longest_silence_s'))} |",
        f"| turns per second | {s['turns_per_s']:.2f} |",
    ]
    out += chaos_markdown(result.settings)
    out += ["", "## Faults", ""]
    out += [_fault_line(f) for f in result.faults] or ["- none fired"]
    out += [
        "",
        "## Turns",
        "",
        "| caller | turn | voice | served by | failed over | degraded | TTFA | audible gap | audio | heard |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.records:
        path = " → ".join(r.regions) or ("edge" if r.degraded else "—")
        fo = ", ".join(f"{f['from']}→{f['to']} ({f['reason']})" for f in r.failovers) or "no"
        heard = "complete" if r.complete else "barged in" if r.barged_in else f"**lost** ({r.status}"
        heard += f"{': ' + r.error if r.error else ''})" if r.lost else ""
        out.append(
            f"| {r.caller} | {r.turn} | {r.voice} | {path} | {fo} | {'yes' if r.degraded else 'no'} | "
            f"{fmt_s(r.ttfa_s)} | {fmt_s(r.max_gap_s)} | {r.audio_s:.1f} s | {heard} |"
        )
    if result.notes:
        out += ["", "## Notes", "", *[f"- {n}" for n in result.notes]]
    out += ["", "![timeline](timeline.png)", ""]
    return "\n".join(out)


def write_report(result: DrillResult, folder: Path, *, command: str = "") -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "report.json", "md": folder / "report.md", "png": folder / "timeline.png"}
    paths["json"].write_text(json.dumps(to_json(result), indent=2, default=str))
    paths["md"].write_text(render_markdown(result, command))
    render_timeline(result, paths["png"])
    return paths


def write_load_report(steps: Sequence[LoadStep], folder: Path, *, command: str = "") -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "load.json", "md": folder / "load.md", "png": folder / "load.png"}
    stats = [s.stats() for s in steps]
    paths["json"].write_text(
        json.dumps(
            {"steps": stats, "turns": {s.concurrency: [r.to_json() for r in s.records] for s in steps}},
            indent=2,
        )
    )
    lines = ["# Load run", ""]
    if command:
        lines += [f"Reproduce: `{command}`", ""]
    lines += [
        "| callers | turns | lost | turns/s | TTFA p50 | TTFA p95 | TTFA p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {s['concurrency']} | {s['turns']} | {s['lost']} | {s['turns_per_s']:.2f} | "
        f"{fmt_s(s['ttfa_p50_s'])} | {fmt_s(s['ttfa_p95_s'])} | {fmt_s(s['ttfa_p99_s'])} |"
        for s in stats
    ]
    paths["md"].write_text("\n".join([*lines, "", "![load](load.png)", ""]))
    render_load_chart(stats, paths["png"])
    return paths
