"""What the caller heard of one reply: the one record every reader of a turn keeps.

A region streams text first and each clause's audio after it. Its text waits here (``pending``)
until the audio of its clause arrives (``clause``): then the clause's text becomes a *piece* for
the caller, and the clause counts as voiced (what a failover or the edge's own voice continues
after). A piece is heard once the caller got it whole (``sent``): the Realtime player sends a
clause's transcript delta when it has sent the clause's audio, so the transcript the client got and
the history's text are the same words, however early a barge-in cuts the reply. ``ends`` says where
in the audio each heard piece ends, so ``conversation.item.truncate`` can cut at ``audio_end_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from router.continuation import join_text, unvoiced_rest, voiced_end


def spaced(before: str, piece: str) -> str:
    """``piece`` as it follows ``before``: with a space when neither side has one."""
    if before and piece and not before[-1:].isspace() and not piece[:1].isspace():
        return " " + piece
    return piece


@dataclass
class Heard:
    pending: str = ""
    """Region text whose clause audio has not arrived (not voiced: never shown as heard)."""
    voiced: str = ""
    """Every clause whose audio arrived, joined, across regions."""
    sent_ms: float = 0.0
    """How much audio the caller got (ms)."""
    ends: list[tuple[str, float]] = field(default_factory=list)
    """``(piece, ms into the audio where it ends)`` of every piece the caller got, as sent (spaced)."""

    @classmethod
    def restored(cls, text: str | None) -> Heard:
        """An answer heard on another edge: all of ``text``, whose audio is gone."""
        return cls(ends=[(text, 0.0)] if text else [])

    # What the region produced.

    def text(self, delta: str) -> None:
        self.pending += delta

    def clause(self, clause_text: str) -> str:
        """The audio of ``clause_text`` arrived: its piece (the pending text up to its end)."""
        end = voiced_end(self.pending, clause_text)
        piece, self.pending = self.pending[:end], self.pending[end:]
        self.voiced = join_text(self.voiced, clause_text)
        return piece

    def take_pending(self) -> str:
        """The text still pending, now given up (a failover or the edge's voice says it instead) or
        released whole (the region completed: its text is the answer)."""
        rest, self.pending = self.pending, ""
        return rest

    def unvoiced_rest(self, text: str) -> str:
        """What of ``text`` (a whole reply known up front) comes after the voiced clauses."""
        return unvoiced_rest(text, self.voiced)

    # What the caller got.

    def played(self, audio_ms: float) -> None:
        """The caller got ``audio_ms`` more audio."""
        self.sent_ms += audio_ms

    def sent(self, piece: str, *, space: bool = True) -> str:
        """The caller got ``piece`` (with the audio played so far); the delta to send for it
        (``""``: nothing). ``space``: spaced from what came before, when neither side is (a region's
        raw text delta is not: it may split a word)."""
        if not piece:
            return ""
        if space:
            piece = spaced(self.ends[-1][0] if self.ends else "", piece)
        self.ends.append((piece, self.sent_ms))
        return piece

    @property
    def heard_text(self) -> str:
        """Everything the caller got: exactly the transcript deltas sent, joined."""
        return "".join(piece for piece, _ in self.ends).strip()

    def heard_until(self, audio_end_ms: float) -> list[str]:
        """The pieces whose audio ended by ``audio_end_ms``."""
        return [piece for piece, end in self.ends if end <= audio_end_ms]

    def text_until(self, audio_end_ms: float) -> str:
        """The text of the pieces whose audio ended by ``audio_end_ms``."""
        return "".join(self.heard_until(audio_end_ms)).strip()

    def truncate(self, audio_end_ms: float) -> None:
        """The audio now ends at ``audio_end_ms`` (a client cut it there)."""
        self.sent_ms = min(self.sent_ms, audio_end_ms)
        self.ends = [(piece, end) for piece, end in self.ends if end <= audio_end_ms]


__all__ = ["Heard", "spaced"]
