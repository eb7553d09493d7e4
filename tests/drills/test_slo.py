"""SLO verdicts computed from turn records (the records are built here; the logic is real)."""

from __future__ import annotations

from voicemesh.drills.faults import FaultMark
from voicemesh.drills.records import TurnRecord, audible_gap
from voicemesh.drills.slo import Slo, evaluate, failover_gap, missed


def turn(
    caller: int, n: int, speech_end: float, first_audio: float | None, done: float, **kw: object
) -> TurnRecord:
    rec = TurnRecord(caller, n, "s", "text", "en-us", speech_start=speech_end - 2, speech_end=speech_end)
    rec.status = str(kw.pop("status", "completed"))
    rec.done = done
    if first_audio is not None:
        rec.first_audio = first_audio
        # Audio in 0.5 s pieces from first audio to done (plus any extra arrivals given).
        t = first_audio
        while t < done:
            rec.add_audio(t, 0.5)
            t += 0.25
    for at in kw.pop("late", []):  # type: ignore[attr-defined]
        rec.add_audio(float(at), 0.5)
    for k, v in kw.items():
        setattr(rec, k, v)
    rec.add_region("eu-west")
    return rec


def test_all_objectives_met() -> None:
    recs = [turn(0, 1, 1.0, 2.0, 4.0), turn(0, 2, 6.0, 7.5, 9.0), turn(1, 1, 6.5, 7.0, 9.0)]
    fault = FaultMark(at=7.2, kind="SIGKILL", region="eu-west")
    verdicts = evaluate(recs, [fault], Slo(), end=10.0)
    assert [v.name for v in verdicts] == ["lost_turns", "failover_gap", "fault_p95_ttfa"]
    assert not missed(verdicts)
    gap = next(v for v in verdicts if v.name == "failover_gap")
    assert "2 turns hit mid-turn" in gap.measured


def test_lost_turn_is_named() -> None:
    recs = [turn(0, 1, 1.0, 2.0, 4.0), turn(1, 2, 5.0, None, 30.0, status="cancelled")]
    verdicts = evaluate(recs, [], Slo(), end=30.0)
    [miss] = missed(verdicts)
    assert miss.name == "lost_turns"
    assert "1 of 2" in miss.measured and "caller 1 turn 2: cancelled" in miss.measured
    # A completed turn without any audio is lost too: the caller heard nothing.
    silent = turn(0, 3, 1.0, None, 3.0)
    assert silent.lost and not silent.complete
    assert missed(evaluate([silent], [], Slo(max_lost_turns=1), end=5.0)) == []


def test_failover_gap_from_fault_to_next_audio() -> None:
    rec = turn(0, 1, 1.0, 2.0, 3.0, late=[8.5])  # audio stops at ~3 s, resumes at 8.5 s
    rec.done = 9.0
    # Four 0.5 s pieces arrived from 2.0 s: the player is busy until 4.0 s, then silent until 8.5 s.
    for at in (2.6, 3.0, 4.5):
        gap = failover_gap(rec, FaultMark(at=at, kind="SIGSTOP", region="eu-west"))
        assert gap is not None and abs(gap - (8.5 - max(4.0, at))) < 1e-9, (at, gap)
    verdicts = evaluate([rec], [FaultMark(at=3.0, kind="SIGSTOP", region="eu-west")], Slo(), end=10.0)
    assert [v.name for v in missed(verdicts)] == ["failover_gap"]
    assert "4.50 s" in missed(verdicts)[0].measured
    # Before the first audio, the gap runs from the fault to the first audio.
    waiting = turn(1, 1, 1.0, 6.0, 7.0)
    assert failover_gap(waiting, FaultMark(at=2.0, kind="SIGKILL", region="eu-west")) == 4.0
    # Audio that was all delivered before the fault: nothing audible was lost.
    assert failover_gap(turn(2, 1, 1.0, 2.0, 3.0), FaultMark(at=3.5, kind="x", region="r")) == 0.0
    # A turn that never got audio again after the fault "never resumed" and misses the objective.
    broken = turn(3, 1, 1.0, 2.0, 3.0, status="cancelled")
    assert failover_gap(broken, FaultMark(at=3.5, kind="x", region="r")) is None


def test_p95_ttfa_only_counts_turns_during_the_fault() -> None:
    before = [turn(i, 1, 1.0, 1.5, 3.0) for i in range(5)]
    during = [turn(i, 2, 10.0, 19.0, 21.0) for i in range(2)]  # TTFA 9 s while the fault holds
    fault = FaultMark(at=9.0, kind="latency", region="eu-west", until=15.0)
    verdicts = evaluate(before + during, [fault], Slo(max_fault_p95_ttfa_s=8.0), end=25.0)
    p95 = next(v for v in verdicts if v.name == "fault_p95_ttfa")
    assert not p95.passed and "9.00 s over 2 turns" in p95.measured
    assert evaluate(before, [fault], Slo(), end=25.0)[2].measured == "no turn answered during the fault"


def test_degraded_objective_is_opt_in() -> None:
    recs = [turn(0, 1, 1.0, 2.0, 4.0, degraded=True)]
    assert [v.name for v in evaluate(recs, [], Slo(), end=5.0)] == ["lost_turns"]
    verdicts = evaluate(recs, [], Slo(max_degraded_turns=0), end=5.0)
    assert [v.name for v in missed(verdicts)] == ["degraded_turns"]


def test_audible_gap_is_buffer_underrun_not_arrival_spacing() -> None:
    # 1 s of audio arrives at t=0, the next piece at 0.8 s: the player never runs dry.
    assert audible_gap([(0.0, 1.0), (0.8, 1.0)]) == 0.0
    # The next piece arrives at 2.5 s: 1.5 s of silence heard.
    assert audible_gap([(0.0, 1.0), (2.5, 1.0), (3.0, 0.5)]) == 1.5
