"""Silences inside an answer as the caller hears them: gaps in playback after the first audio.

Time to first audio says when an answer starts; it says nothing of the stall when the next
clause's audio is not there yet. The caller plays chunks back to back: a chunk starts at
``max(its arrival, end of the previous chunk)``, so a gap is a chunk that arrives after the one
before it finished playing. Gaps no longer than ``floor_s`` are left out (jitter and the pause
between clauses that a listener does not notice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Silences:
    """Playback gaps longer than the floor, after the first chunk of one answer."""

    total_s: float
    longest_s: float
    count: int


def mid_answer_silences(chunks: Sequence[tuple[float, float]], *, floor_s: float = 0.15) -> Silences:
    """Gaps between chunks of one answer, played back to back from their arrival.

    ``chunks`` are ``(arrival_time_s, audio_duration_s)`` in arrival order.
    """
    if floor_s < 0:
        raise ValueError(f"floor_s must be >= 0, got {floor_s}")
    total = longest = 0.0
    count = 0
    end: float | None = None
    for arrival, duration in chunks:
        if duration < 0:
            raise ValueError(f"chunk duration must be >= 0, got {duration} (arrival {arrival})")
        if end is None:
            end = arrival + duration
            continue
        gap = arrival - end
        if gap > floor_s:
            total += gap
            longest = max(longest, gap)
            count += 1
        end = max(arrival, end) + duration
    return Silences(total_s=total, longest_s=longest, count=count)
