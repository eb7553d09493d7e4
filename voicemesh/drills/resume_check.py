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
    """One resuming caller's bookkeeping of the items it saw, summed into ``CallerState``.

    The edge keeps a session's last items only (twice its history: ``Conversation._trim``), so after
    many turns the oldest are gone by design before any fault. What a resume must give back is every
    item seen from the oldest one it replayed on; with none of them replayed, all of them."""

    def __init__(self, state: CallerState) -> None:
        self.state = state
        self._items: dict[str, None] = {}
        """Ids of the conversation items seen done, oldest first: what a resume must give back."""
        self._replayed: dict[str, None] | None = None
        """While a resumed session replays its items: their ids, in the conversation's order."""

    def on_event(self, event: dict[str, Any], session_id: str) -> None:
        """Session and item bookkeeping of a resuming caller (``session_id``: the one it had so far)."""
        kind = event.get("type")
        if kind == "session.created" and session_id:
            self._replayed = {}  # a resumed session: its items follow
        elif kind == "conversation.item.done":
            item_id = str((event.get("item") or {}).get("id", ""))
            if self._replayed is not None:
                self._replayed[item_id] = None
            else:
                self._items[item_id] = None
        elif kind == VENDOR_PREFIX + "session.resumed" and self._replayed is not None:
            seen = list(self._items)
            oldest = next((i for i, item in enumerate(seen) if item in self._replayed), 0)
            expected = seen[oldest:]
            self.state.resumes += 1
            self.state.items_known += len(expected)
            self.state.items_lost += sum(item not in self._replayed for item in expected)
            self._items.update(self._replayed)
            self._replayed = None


def resume_verdicts(state: CallerState, *, resuming: bool) -> list[Verdict]:
    """The SLO on resumed sessions (zero conversation items lost); none without resuming callers."""
    if not resuming:
        return []
    measured = f"{state.items_lost} of {state.items_known} items, {state.resumes} resumes"
    return [Verdict("items_lost", "conversation items lost = 0", measured, state.items_lost == 0)]
