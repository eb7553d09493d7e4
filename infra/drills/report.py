"""What a drill or a load run shows: a live progress line, a summary table, and a report folder.

The folder holds ``report.json`` (everything, per turn), ``report.md`` (for people and the docs)
and ``timeline.png`` (turns over time per region, faults shaded, time to first audio as a line).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display here or in CI
import matplotlib.pyplot as plt
from matplotlib.patches import Patch
from rich.console import Console
from rich.live import Live
from rich.table import Table

from infra.drills.callers import CallerState, TurnRecord, record_from_json
from infra.drills.faults import FaultMark
from infra.drills.runner import DrillResult, LoadStep
from infra.drills.slo import Verdict

DEGRADED_LANE = "edge (degraded)"
LOST_LANE = "lost"


def progress_line(name: str, state: CallerState, faults: Sequence[FaultMark]) -> str:
    recs = state.records
    done = [r for r in recs if r.done is not None]
    fault = f"  fault: {faults[-1].kind} {faults[-1].region} @ {faults[-1].at:.1f}s" if faults else ""
    return (
        f"{name}  {state.clock.now():5.1f}s  sessions {state.sessions_open}  turns done {len(done)}"
        f"  in flight {len(state.in_flight())}  lost {sum(r.lost for r in done)}"
        f"  failed over {sum(r.failed_over for r in recs)}  degraded {sum(r.degraded for r in recs)}{fault}"
    )


class LiveProgress:
    """The live line: rich redraws it from the callers' shared state four times a second (a TTY
    shows one line rewriting itself; ``transient`` leaves the log clean for the summary)."""

    def __init__(self, name: str, console: Console) -> None:
        self.name = name
        self.state: CallerState | None = None
        self.faults: Sequence[FaultMark] = ()
        self._live = Live(get_renderable=self.render, console=console, refresh_per_second=4, transient=True)

    def on_state(self, state: CallerState, faults: list[FaultMark]) -> None:
        self.state, self.faults = state, faults

    def render(self) -> str:
        return "starting…" if self.state is None else progress_line(self.name, self.state, self.faults)

    def __enter__(self) -> LiveProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)


def _fmt(value: float | None, unit: str = "s") -> str:
    return "—" if value is None else f"{value:.2f} {unit}"


def summary_table(result: DrillResult) -> Table:
    s = result.stats()
    table = Table(title=f"drill {result.scenario}: {'PASSED' if result.passed else 'FAILED'}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("callers x turns", f"{result.callers} x {result.settings['turns']}"),
        ("turns completed / lost", f"{s['completed']} / {s['lost']}"),
        ("failed over / degraded / queued", f"{s['failed_over']} / {s['degraded']} / {s['queued']}"),
        ("served by", ", ".join(f"{k} {v}" for k, v in sorted(s["served_by"].items())) or "—"),
        ("TTFA p50 / p95", f"{_fmt(s['ttfa_p50_s'])} / {_fmt(s['ttfa_p95_s'])}"),
        ("max audible gap", _fmt(s["max_audible_gap_s"])),
        ("faults", "; ".join(f"{f.kind} {f.region} @{f.at:.1f}s" for f in result.faults) or "none"),
    ]
    for row in rows:
        table.add_row(*row)
    for v in result.verdicts:
        table.add_row(f"SLO {v.objective}", f"{'✓' if v.passed else '✗'} {v.measured}")
    return table


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


def _lane(r: TurnRecord) -> str:
    if r.lost:
        return LOST_LANE
    if r.degraded:
        return DEGRADED_LANE
    return r.region or "unknown"


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
        f"| turns completed / lost | {s['completed']} / {s['lost']} |",
        f"| failed over / degraded / queued | {s['failed_over']} / {s['degraded']} / {s['queued']} |",
        f"| served by | {', '.join(f'{k}: {v}' for k, v in sorted(s['served_by'].items())) or '—'} |",
        f"| TTFA p50 / p95 / p99 | {_fmt(s['ttfa_p50_s'])} / {_fmt(s['ttfa_p95_s'])} / "
        f"{_fmt(s['ttfa_p99_s'])} |",
        f"| max audible gap | {_fmt(s['max_audible_gap_s'])} |",
        f"| turns per second | {s['turns_per_s']:.2f} |",
    ]
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
        heard = "complete" if r.complete else f"**lost** ({r.status}{': ' + r.error if r.error else ''})"
        out.append(
            f"| {r.caller} | {r.turn} | {r.voice} | {path} | {fo} | {'yes' if r.degraded else 'no'} | "
            f"{_fmt(r.ttfa_s)} | {_fmt(r.max_gap_s)} | {r.audio_s:.1f} s | {heard} |"
        )
    if result.notes:
        out += ["", "## Notes", "", *[f"- {n}" for n in result.notes]]
    out += ["", "![timeline](timeline.png)", ""]
    return "\n".join(out)


def render_timeline(result: DrillResult, path: Path) -> None:
    lanes = sorted(
        {_lane(r) for r in result.records} | set(result.regions),
        key=lambda x: (x in (DEGRADED_LANE, LOST_LANE), x),
    )
    y = {lane: i for i, lane in enumerate(lanes)}
    fig, ax = plt.subplots(figsize=(11, 1.4 + 0.8 * len(lanes)))
    colors = plt.get_cmap("tab10")
    callers = sorted({r.caller for r in result.records})
    row_h = 0.8 / max(len(callers), 1)
    for r in result.records:
        if not r.speech_end:
            continue
        end = r.done if r.done is not None else result.duration_s
        offset = (callers.index(r.caller) - (len(callers) - 1) / 2) * row_h  # one sub-row per caller
        # A failed-over turn is drawn in its first region up to the failover, then in the next one.
        points = [(r.speech_end, r.regions[0] if r.regions else _lane(r))]
        points += [(float(h["at"]), str(h["to"])) for h in r.failovers if h.get("at") is not None]
        segments = [
            (start, stop, lane if lane in y else _lane(r))
            for (start, lane), (stop, _) in zip(points, [*points[1:], (end, "")], strict=True)
        ]
        for start, stop, lane in segments:
            ax.barh(
                y[lane] + offset,
                max(stop - start, 0.05),
                left=start,
                height=row_h * 0.9,
                color=colors(r.caller % 10),
                alpha=0.75,
                edgecolor="black" if r.failed_over else "none",
            )
        for hop, (_, _, lane) in zip(r.failovers, segments, strict=False):
            ax.plot([float(hop["at"])], [y[lane] + offset], marker="x", color="black", markersize=6)
        if r.first_audio is not None:
            lane = next((ln for a, b, ln in segments if a <= r.first_audio <= b), segments[-1][2])
            ax.plot([r.first_audio], [y[lane] + offset], marker="|", color="black", markersize=10)
    for f in result.faults:
        until = f.until if f.until is not None else result.duration_s
        ax.axvspan(f.at, until, color="red", alpha=0.12)
        ax.axvline(f.at, color="red", linewidth=1.2)
        ax.text(f.at, len(lanes) - 0.45, f" {f.kind} {f.region}", color="red", fontsize=8, va="bottom")
    handles = [Patch(color=colors(c % 10), alpha=0.75, label=f"caller {c}") for c in callers[:10]]
    ax.legend(
        handles=handles,
        loc="lower left",
        bbox_to_anchor=(0, 1.0),
        fontsize=7,
        ncol=len(handles[:10]) or 1,
        frameon=False,
    )
    ax.set_xlim(0, max(result.duration_s, *(r.done or 0 for r in result.records)) * 1.02)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(-0.6, len(lanes) - 0.1 + 0.5)
    ax.set_xlabel(
        "seconds since the drill started (bars: end of speech → answer done; | first audio; x failover)"
    )
    ttfa = [
        (r.speech_end, t)
        for r in sorted(result.records, key=lambda r: r.speech_end)
        if (t := r.ttfa_s) is not None
    ]
    if ttfa:
        ax2 = ax.twinx()
        ax2.plot(
            [p[0] for p in ttfa],
            [p[1] for p in ttfa],
            color="tab:purple",
            marker="o",
            linewidth=1.2,
            label="TTFA",
        )
        ax2.set_ylabel("time to first audio (s)", color="tab:purple")
        ax2.set_ylim(0, max(p[1] for p in ttfa) * 1.25)
    ax.set_title(f"drill {result.scenario}: turns per region, faults shaded, TTFA line", pad=18)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(result: DrillResult, folder: Path, *, command: str = "") -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"json": folder / "report.json", "md": folder / "report.md", "png": folder / "timeline.png"}
    paths["json"].write_text(json.dumps(to_json(result), indent=2, default=str))
    paths["md"].write_text(render_markdown(result, command))
    render_timeline(result, paths["png"])
    return paths


def load_table(steps: Sequence[LoadStep]) -> Table:
    table = Table(title="load: throughput and time to first audio versus concurrency")
    for col in ("callers", "sessions", "turns", "lost", "turns/s", "TTFA p50", "TTFA p95", "TTFA p99"):
        table.add_column(col, justify="right")
    for step in steps:
        s = step.stats()
        table.add_row(
            str(step.concurrency),
            str(len({r.caller for r in step.records})),
            str(s["turns"]),
            str(s["lost"]),
            f"{s['turns_per_s']:.2f}",
            _fmt(s["ttfa_p50_s"]),
            _fmt(s["ttfa_p95_s"]),
            _fmt(s["ttfa_p99_s"]),
        )
    return table


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
        f"{_fmt(s['ttfa_p50_s'])} | {_fmt(s['ttfa_p95_s'])} | {_fmt(s['ttfa_p99_s'])} |"
        for s in stats
    ]
    paths["md"].write_text("\n".join([*lines, "", "![load](load.png)", ""]))
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [s["concurrency"] for s in stats]
    for key, label in (("ttfa_p50_s", "p50"), ("ttfa_p95_s", "p95"), ("ttfa_p99_s", "p99")):
        ax.plot(
            xs,
            [s[key] if s[key] is not None else float("nan") for s in stats],
            marker="o",
            label=f"TTFA {label}",
        )
    ax.set_xlabel("concurrent callers")
    ax.set_ylabel("time to first audio (s)")
    ax2 = ax.twinx()
    ax2.bar(xs, [s["turns_per_s"] for s in stats], alpha=0.2, color="gray", label="turns/s")
    ax2.set_ylabel("completed turns per second")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(paths["png"], dpi=110)
    plt.close(fig)
    return paths
