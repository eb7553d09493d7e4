"""Mid-answer silence as the caller hears it: an answer's audio chunks played back to back, each
starting when it arrives or when the one before it ends, whichever is later; a wait longer than
``floor_s`` between two chunks is a silence the caller hears."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Silences:
    total_s: float
    longest_s: float
    count: int


def mid_answer_silences(chunks: Sequence[tuple[float, float]], *, floor_s: float = 0.15) -> Silences:
    """``chunks``: (arrival time s, audio duration s) of one answer's chunks in arrival order. Gaps
    before the first chunk (that is time to first audio) are not counted."""
    total, longest, count = 0.0, 0.0, 0
    end: float | None = None
    for arrival, duration in chunks:
        if end is not None and arrival - end > floor_s:
            gap = arrival - end
            total, longest, count = total + gap, max(longest, gap), count + 1
        start = arrival if end is None else max(arrival, end)
        end = start + duration
    return Silences(total, longest, count)
