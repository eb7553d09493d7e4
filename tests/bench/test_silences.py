"""The mid-answer silence measure: playback of chunks back to back from their arrival."""

from __future__ import annotations

import pytest

from voicemesh.bench.silences import Silences, mid_answer_silences


def test_no_chunks_and_one_chunk_have_no_silence() -> None:
    assert mid_answer_silences([]) == Silences(0.0, 0.0, 0)
    assert mid_answer_silences([(3.0, 1.0)]) == Silences(0.0, 0.0, 0)


def test_chunks_that_arrive_before_playback_runs_dry_leave_no_gap() -> None:
    # Arriving all at once is buffered: each plays after the previous.
    assert mid_answer_silences([(1.0, 0.5), (1.0, 0.5), (1.2, 2.0), (2.4, 0.1)]).count == 0


def test_late_chunks_leave_gaps_measured_from_playback_end() -> None:
    # First plays 1.0-1.5; second arrives at 3.0 -> 1.5 s gap; plays 3.0-3.2; third at 3.25 -> 0.05 (floor).
    s = mid_answer_silences([(1.0, 0.5), (3.0, 0.2), (3.25, 1.0), (8.25, 0.1)])
    assert s.count == 2
    assert s.longest_s == pytest.approx(4.0)  # third plays 3.25-4.25, fourth arrives 8.25
    assert s.total_s == pytest.approx(5.5)


def test_floor_is_exclusive_and_configurable() -> None:
    chunks = [(0.0, 1.0), (1.2, 1.0)]
    assert mid_answer_silences(chunks, floor_s=0.2).count == 0
    s = mid_answer_silences(chunks, floor_s=0.1)
    assert s.count == 1
    assert s.total_s == s.longest_s == pytest.approx(0.2)


def test_bad_input_is_refused_with_the_value() -> None:
    with pytest.raises(ValueError, match="floor_s"):
        mid_answer_silences([], floor_s=-1)
    with pytest.raises(ValueError, match="duration"):
        mid_answer_silences([(0.0, -0.1)])
