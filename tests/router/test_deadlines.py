"""The per-attempt deadline state machine and the region's failed-probe signal: pure, no sockets.

Times are loop times passed in by the test: nothing here waits on a clock.
"""

from __future__ import annotations

import pytest

from router.breaker_storage import MemoryBreakerStorage
from router.breakers import BreakerBoard
from router.deadlines import AttemptDeadline, Stage
from router.health import HealthReport, RegionHealth
from router.health_board import HealthBoard, Latency
from router.registry import Location, RegionRecord
from router.settings import RouterSettings
from wire.client import ClauseAudio
from wire.turn import AudioClause, TextDelta, Transcript, TurnAdmitted, TurnQueued

SETTINGS = RouterSettings(
    location=Location(50.0, 8.0),
    first_byte_floor_s=1.0,
    first_audio_floor_s=3.0,
    stall_floor_s=2.0,
    hang_confirm_s=0.5,
)


def _region() -> RegionHealth:
    return RegionHealth(
        RegionRecord(id="r", url="http://127.0.0.1:1", location=Location(50.0, 8.0)), SETTINGS
    )


def stage(d: AttemptDeadline) -> Stage:
    return d.stage  # read through a call: mypy would keep an earlier narrowing of ``d.stage``


def _clause(text: str) -> ClauseAudio:
    return ClauseAudio(AudioClause(turn_id="t", index=0, text=text), b"\0\0")


def test_stages_follow_the_answer_and_feed_the_region_measures() -> None:
    r = _region()
    heard: list[Latency] = []

    def learn(latency: Latency) -> None:  # what the health board is told (``HealthBoard.measured``)
        heard.append(latency)
        board.measured(r, latency)

    board = HealthBoard(SETTINGS, BreakerBoard(MemoryBreakerStorage(), fail_max=1, reset_timeout_s=1))
    d = AttemptDeadline(r, started=100.0, learn=learn)
    assert stage(d) is Stage.FIRST_BYTE
    assert d.deadline == pytest.approx(100.0 + r.first_byte_deadline_s())

    d.heard(TurnAdmitted(turn_id="t", region="r"), 100.2)
    assert stage(d) is Stage.TRANSCRIPT and r.first_byte.value == pytest.approx(0.2)
    d.rearm(TurnAdmitted(turn_id="t", region="r"), 100.2, pending_chars=0)
    assert d.deadline == pytest.approx(100.2 + r.first_audio_deadline_s())

    d.heard(Transcript(turn_id="t", text="hi"), 100.5)
    assert stage(d) is Stage.AUDIO
    d.rearm(Transcript(turn_id="t", text="hi"), 100.5, pending_chars=0)
    assert d.deadline == pytest.approx(100.5 + r.stall_deadline_s(0))

    d.heard(TextDelta(turn_id="t", delta="Hello there."), 100.6)
    assert stage(d) is Stage.AUDIO  # text alone is not audio
    d.heard(_clause("Hello there."), 101.0)
    assert stage(d) is Stage.SPEAKING and r.ttfa.value == pytest.approx(1.0)
    assert r.synth_s_per_char.value is None
    d.heard(_clause("And more words here."), 101.8)
    assert r.synth_s_per_char.value == pytest.approx(0.8 / len("And more words here."))
    d.rearm(_clause("And more words here."), 101.8, pending_chars=40)
    assert d.deadline == pytest.approx(101.8 + r.stall_deadline_s(40))
    assert d.last_event == d.last_audio == 101.8
    assert [h.kind for h in heard] == ["first_byte", "first_audio", "clause_gap"]


def test_without_a_learner_the_attempt_feeds_no_measure() -> None:
    """A batch item's attempt: its latencies say nothing of the region's speed."""
    r = _region()
    d = AttemptDeadline(r, started=0.0)
    d.heard(TurnAdmitted(turn_id="t", region="r"), 0.2)
    d.heard(_clause("Hello there."), 1.0)
    d.heard(_clause("And more."), 2.0)
    assert r.first_byte.value is None and r.ttfa.value is None and r.synth_s_per_char.value is None


def test_a_queued_turn_waits_its_estimated_wait_plus_first_audio() -> None:
    r = _region()
    d = AttemptDeadline(r, started=0.0)
    queued = TurnQueued(turn_id="t", position=2, estimated_wait_s=7.0)
    d.heard(queued, 0.1)
    d.rearm(queued, 0.1, pending_chars=0)
    assert d.deadline == pytest.approx(0.1 + 7.0 + r.first_audio_deadline_s())


def test_slack_stretches_every_deadline() -> None:
    r = _region()
    plain, slack = AttemptDeadline(r, started=0.0), AttemptDeadline(r, started=0.0, slack=3.0)
    assert slack.deadline == pytest.approx(3 * plain.deadline)
    for d in (plain, slack):
        d.heard(Transcript(turn_id="t", text="x"), 1.0)
        d.rearm(Transcript(turn_id="t", text="x"), 1.0, pending_chars=0)
    assert slack.deadline - 1.0 == pytest.approx(3 * (plain.deadline - 1.0))


def test_a_failed_probe_cuts_the_deadline_to_a_short_confirmation() -> None:
    """Replaces the old ``watch``/``unwatch`` test: the prober no longer edits turns' timeouts; each
    attempt asks its own ``due()``, which the region's failed probe shortens."""
    r = _region()
    d = AttemptDeadline(r, started=0.0, slack=3.0)
    d.heard(_clause("Hello."), 1.0)
    d.rearm(_clause("Hello."), 1.0, pending_chars=50)
    assert d.due() == d.deadline > 1.0 + SETTINGS.hang_confirm_s
    assert not r.hang_suspected.is_set()

    r.observe_probe(None, 0.0, "ConnectError: refused")  # the process is gone
    assert r.hang_suspected.is_set()
    assert d.due() == pytest.approx(1.0 + SETTINGS.hang_confirm_s)
    # Only no answer in time: maybe a busy region; the last one left (slack 3) gets 3x the time.
    r.observe_probe(None, 0.0, "ReadTimeout", timed_out=True)
    assert d.due() == pytest.approx(1.0 + 3.0 * SETTINGS.hang_confirm_s)
    assert AttemptDeadline(r, started=1.0, slack=1.0).due() == pytest.approx(1.0 + SETTINGS.hang_confirm_s)
    r.observe_probe(None, 0.0, "ConnectError: refused")
    err = d.expired(1.0 + SETTINGS.hang_confirm_s)
    assert err.code == "first_byte_timeout" and err.region == "r"
    assert "after a failed health probe" in err.message and "progress after audio" in err.message

    # A deadline already shorter than the confirmation stays as it is.
    d.deadline = 1.1
    assert d.due() == 1.1

    # A healthy probe cuts nothing.
    r.observe_probe(HealthReport(), 0.001)
    assert not r.hang_suspected.is_set()
    d.deadline = 50.0
    assert d.due() == 50.0
    assert "failed health probe" not in d.expired(50.0).message


def test_timeout_message_names_the_stage_waited_for() -> None:
    d = AttemptDeadline(_region(), started=10.0)
    err = d.expired(11.5)
    assert err.message == "region r: silent for 1.50s (waiting for first byte)"


def test_one_late_probe_of_a_healthy_region_is_noted_and_the_next_makes_it_suspect() -> None:
    """A busy machine may answer one probe late: that alone neither leaves the region nor cuts its
    turns' deadlines; ``probe_timeouts_to_suspect`` in a row do. An answer resets the count."""
    r = _region()
    r.observe_probe(HealthReport(), 0.001)
    for _ in range(SETTINGS.probe_timeouts_to_suspect - 1):
        r.observe_probe(None, 0.0, "ReadTimeout", timed_out=True)
        assert r.probe_ok and r.reachable and not r.hang_suspected.is_set()
        assert r.hang_cutoff(1.0) is None and r.probe_error == "ReadTimeout"
    r.observe_probe(HealthReport(), 0.001)
    r.observe_probe(None, 0.0, "ReadTimeout", timed_out=True)
    assert r.probe_ok, "the count starts again after an answer"
    for _ in range(SETTINGS.probe_timeouts_to_suspect - 1):
        r.observe_probe(None, 0.0, "ReadTimeout", timed_out=True)
    assert r.probe_ok is False and not r.reachable and r.hang_suspected.is_set()
    assert r.hang_cutoff(1.0) == pytest.approx(1.0 + SETTINGS.hang_confirm_s)
