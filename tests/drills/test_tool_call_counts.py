"""The drill's count of function calls lost and duplicated (``voicemesh/drills/tool_calls.py``), on
hand-made turn records: what each kind of turn counts as, and the SLO verdicts (zero of each)."""

from __future__ import annotations

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.records import TurnRecord
from voicemesh.drills.tool_calls import tool_call_counts, tool_call_verdicts


def turn(caller: int, n: int, *, status: str = "completed", degraded: bool = False) -> TurnRecord:
    rec = TurnRecord(caller, n, "sess", "What is the weather?", "alloy", speech_start=0.0, status=status)
    rec.degraded = degraded
    return rec


def test_each_turn_counts_as_what_happened_to_its_call() -> None:
    state = CallerState(tool_callers={0})
    state.records = [
        turn(0, 1),  # one call: fine
        turn(0, 2),  # no call, served by a region: lost
        turn(0, 3, degraded=True),  # the fallback voice answered: no call by design
        turn(0, 4),  # two calls in one turn: one duplicated
        turn(0, 5, status="not_started"),  # never asked
        turn(1, 1),  # not a tool caller
    ]
    state.calls = {(0, 1): ["call_a"], (0, 4): ["call_b", "call_c"]}
    assert tool_call_counts(state) == {"tool_turns": 4, "calls_lost": 1, "calls_duplicated": 1}
    lost, duplicated = tool_call_verdicts(state)
    assert (lost.name, lost.passed, lost.measured) == ("calls_lost", False, "1 of 4 tool-calling turns")
    assert (duplicated.name, duplicated.passed) == ("calls_duplicated", False)


def test_no_tool_callers_no_verdicts_and_clean_turns_pass() -> None:
    assert tool_call_verdicts(CallerState()) == []
    state = CallerState(tool_callers={0})
    state.records = [turn(0, 1), turn(0, 2)]
    state.calls = {(0, 1): ["a"], (0, 2): ["b"]}
    assert all(v.passed for v in tool_call_verdicts(state))
