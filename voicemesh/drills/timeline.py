"""The report's pictures: a drill's timeline (turns per region over time, faults shaded, time to
first audio as a line) and a load run's chart (TTFA and throughput against concurrency)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display here or in CI
import matplotlib.pyplot as plt
from matplotlib.patches import Patch

from voicemesh.drills.records import TurnRecord
from voicemesh.drills.runner import DrillResult

DEGRADED_LANE = "edge (degraded)"
LOST_LANE = "lost"


def _lane(r: TurnRecord) -> str:
    if r.lost:
        return LOST_LANE
    if r.degraded:
        return DEGRADED_LANE
    return r.region or "unknown"


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


def render_load_chart(stats: Sequence[dict[str, Any]], path: Path) -> None:
    """TTFA percentiles (lines) and completed turns per second (bars) against concurrency."""
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
    fig.savefig(path, dpi=110)
    plt.close(fig)
