"""Failover records are typed, keyed by turn, and read by the ops page and drills as plain JSON."""

from __future__ import annotations

import msgspec

from router.failover_log import FailoverLog, FailoverRecord

KEYS = [
    "at",
    "session",
    "turn_id",
    "from",
    "to",
    "reason",
    "detail",
    "heard_chars",
    "gap_s",
    "warm_connection",
]


def _rec(session: str, turn: str, to: str | None = "b") -> FailoverRecord:
    return FailoverRecord(
        at=FailoverRecord.now(),
        session=session,
        turn_id=turn,
        from_region="a",
        to_region=to,
        reason="region_disconnected",
    )


def test_each_turn_gets_its_own_gap_whatever_the_order() -> None:
    log = FailoverLog(10)
    log.failed_over(_rec("s1", "t1"))
    log.failed_over(_rec("s2", "t2"))  # another turn failed over since
    assert log.note_gap("s1", "t1", 0.25, True)
    assert log.note_gap("s2", "t2", 0.5, False)
    (one,), (two,) = log.for_turn("t1"), log.for_turn("t2")
    assert (one.gap_s, one.warm_connection) == (0.25, True)
    assert (two.gap_s, two.warm_connection) == (0.5, False)


def test_the_gap_goes_to_the_turns_latest_failover_never_to_a_degrade() -> None:
    log = FailoverLog(10)
    log.failed_over(_rec("s", "t"))
    log.failed_over(_rec("s", "t", to="c"))
    log.degraded_turn(_rec("s", "t", to=None))
    assert log.note_gap("s", "t", 1.0, True)
    first, second, degraded = log.for_turn("t")
    assert first.gap_s is None and second.gap_s == 1.0 and degraded.gap_s is None
    assert log.degraded == 1
    assert not log.note_gap("s", "other", 1.0, True)  # nothing of that turn: nothing written


def test_json_shape_is_what_ops_and_drills_read() -> None:
    log = FailoverLog(2)
    for i in range(3):
        log.failed_over(_rec("s", f"t{i}"))
    log.note_gap("s", "t2", 0.123456, True)
    out = log.as_json()
    assert len(log) == 2 and [r["turn_id"] for r in out] == ["t1", "t2"]  # bounded, newest last
    assert list(out[1]) == KEYS
    assert out[1]["from"] == "a" and out[1]["to"] == "b" and out[1]["gap_s"] == 0.1235
    assert msgspec.json.decode(msgspec.json.encode(out)) == out
