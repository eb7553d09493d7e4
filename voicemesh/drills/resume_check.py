"""Resumed sessions (the edge drills): what a resume gave back, and the SLO on it.

A resuming caller lets the SDK reconnect and resume its session (``docs/resume.md``) instead of
recording the drop: it counts its resumes, and every conversation item it had seen that the resumed
session did not replay is a lost item (``resume_verdicts``).
"""

from __future__ import annotations

from typing import Any

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.slo import Verdict
from voicemesh.realtime import VENDOR_PREFIX


class ResumeCheck:
    """One resuming caller's bookkeeping of the items it saw, summed into ``CallerState``."""

    def __init__(self, state: CallerState) -> None:
        self.state = state
        self._items: set[str] = set()
        """Ids of the conversation items seen done: what a resume must give back."""
        self._replayed: set[str] | None = None
        """While a resumed session replays its items: their ids."""

    def on_event(self, event: dict[str, Any], session_id: str) -> None:
        """Session and item bookkeeping of a resuming caller (``session_id``: the one it had so far)."""
        kind = event.get("type")
        if kind == "session.created" and session_id:
            self._replayed = set()  # a resumed session: its items follow
        elif kind == "conversation.item.done":
            item_id = str((event.get("item") or {}).get("id", ""))
            if self._replayed is not None:
                self._replayed.add(item_id)
            else:
                self._items.add(item_id)
        elif kind == VENDOR_PREFIX + "session.resumed" and self._replayed is not None:
            self.state.resumes += 1
            self.state.items_known += len(self._items)
            self.state.items_lost += len(self._items - self._replayed)
            self._items |= self._replayed
            self._replayed = None


def resume_verdicts(state: CallerState, *, resuming: bool) -> list[Verdict]:
    """The SLO on resumed sessions (zero conversation items lost); none without resuming callers."""
    if not resuming:
        return []
    measured = f"{state.items_lost} of {state.items_known} items, {state.resumes} resumes"
    return [Verdict("items_lost", "conversation items lost = 0", measured, state.items_lost == 0)]
