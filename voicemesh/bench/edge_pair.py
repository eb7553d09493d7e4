"""``voicemesh bench edge-pair``: two checkouts' edges compared in the same minutes.

On a shared machine the CPU an edge spends per stream-second drifts by 10-20 % from one minute to
the next, more than most changes to it are worth, so runs of two versions one after the other
compare badly. Here both edges run at once, pinned to the same core, ``n`` streams each (the client
elsewhere): they see the same host, and the ratio of their CPU per stream-second is the change.
Rounds alternate which edge starts first. Past the core's capacity each edge gets half of it and
the costlier one serves its backlog after the window: that CPU is counted too (``stream_into``).
Below it, an edge with CPU to spare spends some on smaller VAD batches, which blurs the ratio: give
enough streams that the two together fill the core (300 each on this 2-core box).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path

from edge.shared.settings import EdgeSettings
from voicemesh.bench.edge_process import EdgeProcess, Report
from voicemesh.bench.edge_streams import stream_into


@dataclass
class PairResult:
    a: Path
    b: Path
    cost_a: list[float] = field(default_factory=list)
    """``a``'s ms of CPU per stream-second, one per round."""
    cost_b: list[float] = field(default_factory=list)

    @property
    def ratios(self) -> list[float]:
        """``b``'s cost over ``a``'s, round by round."""
        return [b / a for a, b in zip(self.cost_a, self.cost_b, strict=True)]

    def summary(self) -> str:
        r = self.ratios
        return (
            f"b ({self.b}) / a ({self.a}): CPU per stream-second {statistics.median(r):.3f}x "
            f"(rounds {min(r):.3f}-{max(r):.3f}); medians {statistics.median(self.cost_a):.2f} and "
            f"{statistics.median(self.cost_b):.2f} ms"
        )


async def bench_pair(
    settings: EdgeSettings, a: Path, b: Path, *, n: int, seconds: float, rounds: int, report: Report,
    out: Report,
) -> PairResult:  # fmt: skip
    result = PairResult(a, b)
    for r in range(rounds):
        order = (a, b) if r % 2 == 0 else (b, a)
        edges = [EdgeProcess(settings, core=0, checkout=checkout) for checkout in order]
        try:
            measured = await stream_into(edges, n, seconds, report)
        finally:
            for edge in edges:
                edge.stop()
        of_a, of_b = measured if r % 2 == 0 else measured[::-1]
        result.cost_a.append(of_a["cpu_ms_per_stream_s"])
        result.cost_b.append(of_b["cpu_ms_per_stream_s"])
        out(
            f"round {r + 1}/{rounds}: "
            + ", ".join(
                f"{name} {m['cpu_ms_per_stream_s']:.2f} ms per stream-second (backlog p50 "
                f"{m['backlog_p50_ms']:.0f} ms, VAD batch {m['mean_batch']:.0f})"
                for name, m in (("a", of_a), ("b", of_b))
            )
            + f"; b/a {result.ratios[-1]:.3f}"
        )
    return result
