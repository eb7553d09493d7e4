"""What a drill or a load run shows on the terminal: a live progress line and summary tables."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.live import Live
from rich.table import Table

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.faults import FaultMark
from voicemesh.drills.report import fmt_s
from voicemesh.drills.runner import DrillResult, LoadStep


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
        ("TTFA p50 / p95", f"{fmt_s(s['ttfa_p50_s'])} / {fmt_s(s['ttfa_p95_s'])}"),
        ("max audible gap", fmt_s(s["max_audible_gap_s"])),
        ("longest silence / turns barged in", f"{fmt_s(s['longest_silence_s'])} / {s['barged_in']}"),
        ("faults", "; ".join(f"{f.kind} {f.region} @{f.at:.1f}s" for f in result.faults) or "none"),
    ]
    for row in rows:
        table.add_row(*row)
    for v in result.verdicts:
        table.add_row(f"SLO {v.objective}", f"{'✓' if v.passed else '✗'} {v.measured}")
    return table


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
            fmt_s(s["ttfa_p50_s"]),
            fmt_s(s["ttfa_p95_s"]),
            fmt_s(s["ttfa_p99_s"]),
        )
    return table
