"""Service-level objectives for a drill, and the verdicts a run earns against them.

Defaults: no lost turn (every caller heard a complete answer), a failover gap under a bound (the
silence a caller in mid-turn hears because of the fault), and p95 time to first
audio under a bound for the turns that ran during a fault.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from voicemesh.drills.faults import FaultMark
from voicemesh.drills.records import TurnRecord, silences


@dataclass(frozen=True)
class Slo:
    max_lost_turns: int = 0
    max_failover_gap_s: float = 4.0
    max_fault_p95_ttfa_s: float = 8.0
    max_degraded_turns: int | None = None
    """``None``: degraded (edge-voiced) turns are allowed; they still count as answered."""


@dataclass(frozen=True)
class Verdict:
    name: str
    objective: str
    measured: str
    passed: bool

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else None


def fault_windows(faults: Sequence[FaultMark], end: float) -> list[tuple[float, float]]:
    return [(f.at, f.until if f.until is not None else end) for f in faults]


def hit_by_fault(record: TurnRecord, faults: Sequence[FaultMark]) -> FaultMark | None:
    """The first fault that began while this turn was waiting for or playing its answer."""
    done = record.done if record.done is not None else float("inf")
    for f in faults:
        if record.speech_end and record.speech_end <= f.at <= done:
            return f
    return None


def failover_gap(record: TurnRecord, fault: FaultMark) -> float | None:
    """The silence a caller mid-turn heard because of the fault (None: the answer never resumed).

    Before the first audio: from the fault to the first audio. Mid-answer: the longest silence the
    caller's player ran into after the fault (audio already buffered at the edge or the client
    plays on, so a fast failover costs nothing audible)."""
    before = [a for a in record.arrivals if a[0] < fault.at]
    after = [a for a in record.arrivals if a[0] >= fault.at]
    if not after:
        return 0.0 if before and not record.lost else None
    if not before:
        return after[0][0] - fault.at
    gaps, _ = silences(record.arrivals)
    return max((end - max(start, fault.at) for start, end in gaps if end >= fault.at), default=0.0)


def during_faults(records: Sequence[TurnRecord], faults: Sequence[FaultMark], end: float) -> list[TurnRecord]:
    windows = fault_windows(faults, end)
    return [
        r
        for r in records
        if hit_by_fault(r, faults) is not None
        or any(a <= r.speech_end <= b for a, b in windows if r.speech_end)
    ]


def evaluate(
    records: Sequence[TurnRecord], faults: Sequence[FaultMark], slo: Slo, *, end: float
) -> list[Verdict]:
    verdicts: list[Verdict] = []
    lost = [r for r in records if r.lost]
    verdicts.append(
        Verdict(
            "lost_turns",
            f"lost turns <= {slo.max_lost_turns}",
            f"{len(lost)} of {len(records)}"
            + (
                " (" + ", ".join(f"caller {r.caller} turn {r.turn}: {r.status}" for r in lost[:5]) + ")"
                if lost
                else ""
            ),
            len(lost) <= slo.max_lost_turns,
        )
    )
    if faults:
        gaps: list[float] = []
        missing = 0
        for r in records:
            fault = hit_by_fault(r, faults)
            if fault is None:
                continue
            gap = failover_gap(r, fault)
            if gap is None:
                missing += 1
            else:
                gaps.append(gap)
        worst = max(gaps, default=0.0)
        verdicts.append(
            Verdict(
                "failover_gap",
                f"max failover gap <= {slo.max_failover_gap_s:.1f} s",
                (
                    f"{worst:.2f} s over {len(gaps)} turns hit mid-turn"
                    if gaps
                    else "no turn was mid-answer at a fault"
                )
                + (f", {missing} never resumed" if missing else ""),
                worst <= slo.max_failover_gap_s and missing == 0,
            )
        )
        ttfas = [t for r in during_faults(records, faults, end) if (t := r.ttfa_s) is not None]
        p95 = percentile(ttfas, 95)
        verdicts.append(
            Verdict(
                "fault_p95_ttfa",
                f"p95 TTFA during the fault <= {slo.max_fault_p95_ttfa_s:.1f} s",
                f"{p95:.2f} s over {len(ttfas)} turns"
                if p95 is not None
                else "no turn answered during the fault",
                p95 is not None and p95 <= slo.max_fault_p95_ttfa_s,
            )
        )
    if slo.max_degraded_turns is not None:
        degraded = sum(r.degraded for r in records)
        verdicts.append(
            Verdict(
                "degraded_turns",
                f"degraded turns <= {slo.max_degraded_turns}",
                f"{degraded} of {len(records)}",
                degraded <= slo.max_degraded_turns,
            )
        )
    return verdicts


def missed(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if not v.passed]
