"""What the user has heard of a turn, and what they have not, across failovers.

A region streams text first and the audio of each clause after it. When a region dies mid-answer
the user has heard exactly the clauses whose audio reached the edge: the next region is told that
text (``heard_text``) and continues after it. If no region is left, the text that arrived without
its audio is handed to the edge to speak itself.
"""

from __future__ import annotations

from dataclasses import dataclass


def join_text(a: str, b: str) -> str:
    a, b = a.strip(), b.strip()
    if not a or not b:
        return a or b
    return f"{a} {b}"


def voiced_end(text: str, voiced: str) -> int:
    """Where the clauses in ``voiced`` end in ``text``: the index after their last character,
    compared ignoring whitespace (a region may trim or re-space clause text). At the first character
    that differs, its index (what follows is not the voiced text); ``len(text)`` if ``text`` ends first."""
    want = [c for c in voiced if not c.isspace()]
    i = 0
    for pos, ch in enumerate(text):
        if i == len(want):
            return pos
        if ch.isspace():
            continue
        if ch != want[i]:
            return pos
        i += 1
    return len(text)


def unvoiced_rest(text: str, voiced: str) -> str:
    """The part of ``text`` after the clauses in ``voiced``."""
    return text[voiced_end(text, voiced) :].strip()


@dataclass
class TurnProgress:
    """Everything one turn has produced so far, across regions."""

    heard_text: str = ""
    """Text of every clause whose audio was passed to the edge (including the caller's own)."""
    transcript: str | None = None
    attempt_text: str = ""
    """Text deltas of the current region's attempt."""
    attempt_voiced: str = ""

    def new_attempt(self) -> None:
        self.attempt_text = ""
        self.attempt_voiced = ""

    def text(self, delta: str) -> None:
        self.attempt_text += delta

    def voiced(self, clause: str) -> None:
        self.heard_text = join_text(self.heard_text, clause)
        self.attempt_voiced = join_text(self.attempt_voiced, clause)

    @property
    def pending_chars(self) -> int:
        """About how much received text still awaits its audio (cheap: for deadlines)."""
        return max(len(self.attempt_text) - len(self.attempt_voiced), 0)

    @property
    def unvoiced_text(self) -> str:
        return unvoiced_rest(self.attempt_text, self.attempt_voiced)
