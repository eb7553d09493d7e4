"""What a resuming drill caller counts as conversation items lost (``voicemesh/drills/resume_check.py``):
items the resumed session did not give back, but not the oldest ones the edge had already let go by
design (it keeps a session's last items: ``Conversation._trim``). Events as the edge sends them."""

from __future__ import annotations

from typing import Any

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.resume_check import ResumeCheck, resume_verdicts


def _done(item_id: str) -> dict[str, Any]:
    return {"type": "conversation.item.done", "item": {"id": item_id}}


def _resume(check: ResumeCheck, replayed: list[str]) -> None:
    check.on_event({"type": "session.created"}, "sess_1")
    for item_id in replayed:
        check.on_event(_done(item_id), "sess_1")
    check.on_event({"type": "voicemesh.session.resumed"}, "sess_1")


def test_items_older_than_the_oldest_replayed_were_let_go_by_design_not_lost() -> None:
    state = CallerState()
    check = ResumeCheck(state)
    for i in range(10):
        check.on_event(_done(f"item_{i}"), "sess_1")
    _resume(check, [f"item_{i}" for i in range(4, 10)])  # the edge kept the last six
    assert (state.resumes, state.items_known, state.items_lost) == (1, 6, 0)
    # One in the kept range missing is lost; so is a newer one seen after the first resume.
    check.on_event(_done("item_10"), "sess_1")
    _resume(check, ["item_4", "item_5", "item_7", "item_8", "item_9"])
    assert (state.resumes, state.items_known, state.items_lost) == (2, 13, 2)  # item_6, item_10
    [verdict] = resume_verdicts(state, resuming=True)
    assert not verdict.passed and verdict.measured == "2 of 13 items, 2 resumes"


def test_a_resume_that_gives_nothing_back_loses_everything_seen() -> None:
    state = CallerState()
    check = ResumeCheck(state)
    for i in range(3):
        check.on_event(_done(f"item_{i}"), "sess_1")
    _resume(check, [])
    assert (state.items_known, state.items_lost) == (3, 3)
