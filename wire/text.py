"""Cut text into clauses or sentences that TTS can speak one at a time (the region and the edge).

The first clause ends at the first comma or sentence boundary once it has a sensible minimum
length, so the first audio starts early; later clauses end at sentence boundaries, so prosody
stays natural. With ``first_words`` set, the first clause also ends after that many words (at the
whitespace that follows a word, never inside one, and not right after a word that leans on the
next, such as "the" or "of"), so a long opening sentence starts being spoken after a few words.
With ``later_words`` the next clauses grow by a schedule (a few more words each, also ending at a
comma) before whole sentences: each is synthesised while the shorter ones before it play.

A boundary is punctuation *followed by whitespace*: text that stops right after a "." is held
until the next delta shows whether it was "3." + "5" (a decimal) or the end of a sentence.
Abbreviations ("Dr.", "e.g.") and single initials never end a clause.

``ClauseChunker`` is a pure state machine (no I/O, no clocks): feed deltas, get whole clauses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ABBREVIATIONS = frozenset(
    {
        "dr", "mr", "mrs", "ms", "prof", "sr", "jr", "st", "mt", "vs", "etc", "e.g", "i.e", "eg", "ie",
        "approx", "no", "fig", "inc", "ltd", "co", "corp", "dept", "est", "u.s", "u.k", "a.m", "p.m",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    }
)  # fmt: skip

# Closing quotes/brackets may follow the punctuation; the boundary is after them.
_SENTENCE_END = re.compile(r"(?:[.!?…]+|\n)[\"'”’)\]]*(?=\s)")
_CLAUSE_END = re.compile(r"(?:[.!?…]+|[,;:—–]|\n)[\"'”’)\]]*(?=\s)")
_LAST_WORD = re.compile(r"(\S+)$")
_CLOSERS = "\"'”’)]"
_WORD_THEN_SPACE = re.compile(r"\S+\s+")

LEANING_WORDS = frozenset(
    {
        "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "and", "or",
        "but", "nor", "so", "as", "than", "that", "if", "my", "your", "his", "her", "its", "our",
        "their", "this", "these", "those", "is", "are", "was", "were", "be", "very", "not", "no",
    }
)  # fmt: skip
"""Words the next word completes: a first chunk cut by word count never ends on one ("The
capital of" would be spoken with a falling tone mid-phrase)."""
_PAUSES = ",;:—–"


def _is_abbreviation(text_before: str) -> bool:
    """``text_before`` ends just before the punctuation mark that would end the clause."""
    m = _LAST_WORD.search(text_before)
    if not m:
        return False
    word = m.group(1).lstrip("\"'“‘([").lower()
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. Smith"
    return word.rstrip(".") in ABBREVIATIONS


def _leans_on_next(word: str) -> bool:
    """Whether a word-count cut after ``word`` would split a phrase: "the", "of", "Dr.", "J."."""
    bare = word.lower().strip(_CLOSERS + "“‘([")
    if bare in LEANING_WORDS:
        return True
    return bare.endswith(".") and _is_abbreviation(bare[:-1])


@dataclass
class ClauseChunker:
    min_first_chars: int = 8
    """A comma ends the first clause only after this many characters (shorter sounds choppy)."""
    max_first_chars: int = 60
    """With no boundary by then, the first clause ends at the last space (keeps first audio early)."""
    max_chars: int = 250
    """Any clause longer than this ends at its last comma or space."""
    first_at_pauses: bool = True
    """Whether the first clause may end at a comma (early first audio); off: sentences only."""
    first_words: int = 0
    """With no boundary before, the first clause ends after this many words (0: off): the first
    audio chunk of a long opening sentence is a few words; later clauses stay whole."""
    later_words: tuple[int, ...] = ()
    """Word caps of the clauses after the first, in order (a growing schedule, e.g. ``(6, 12)``):
    each also ends at a comma, so its synthesis is short enough to finish while the clauses before it
    play; the clauses past the schedule end at sentence ends only."""
    _buf: str = field(default="", init=False)
    _emitted: int = field(default=0, init=False)

    def feed(self, delta: str) -> list[str]:
        """Add generated text; return the clauses it completed, in order."""
        self._buf += delta
        out: list[str] = []
        while (clause := self._next()) is not None:
            if clause:
                out.append(clause)
                self._emitted += 1
        return out

    def flush(self) -> str | None:
        """The text left when generation ends (the last clause), or ``None``."""
        rest, self._buf = self._buf.strip(), ""
        if not any(c.isalnum() for c in rest):
            return None
        self._emitted += 1
        return rest

    def _next(self) -> str | None:
        """The next complete clause; ``""`` for a punctuation-only scrap; ``None`` when none is complete."""
        first = self._emitted == 0
        words = self.first_words if first else self._scheduled_words()
        words_end = self._after_words(words) if words > 0 else None
        at_pauses = self.first_at_pauses if first else words > 0
        for m in (_CLAUSE_END if at_pauses else _SENTENCE_END).finditer(self._buf):
            if words_end is not None and m.start() >= words_end:
                break  # the words came first (as they would have while streaming)
            mark = m.group(0).rstrip(_CLOSERS)
            before = self._buf[: m.start()]
            if mark == "." and _is_abbreviation(before):
                continue
            if mark[:1] in _PAUSES and (
                len(before.strip()) < self.min_first_chars or _is_abbreviation(before)
            ):
                continue
            return self._take(m.end())
        limit = self.max_first_chars if first else self.max_chars
        if words_end is not None and words_end <= limit:  # past it, the soft break below came first
            return self._take(words_end)
        if len(self._buf) > limit:
            return self._take(self._soft_break(limit))
        return None

    def _scheduled_words(self) -> int:
        """The word cap of this later clause in ``later_words`` (0: past the schedule)."""
        n = self._emitted - 1
        return self.later_words[n] if n < len(self.later_words) else 0

    def _after_words(self, n: int) -> int | None:
        """Where the buffer ends after its ``n``-th whole word (one followed by whitespace, so a word
        still arriving is never cut), moved past words that lean on the next; ``None`` before that."""
        count = 0
        for m in _WORD_THEN_SPACE.finditer(self._buf):
            word = m.group(0).strip()
            if any(c.isalnum() for c in word):
                count += 1
            if count >= n and not _leans_on_next(word):
                return m.end()
        return None

    def _soft_break(self, limit: int) -> int:
        head = self._buf[:limit]
        for sep in (", ", " "):
            i = head.rfind(sep)
            if i > 0:
                return i + len(sep)
        return limit

    def _take(self, end: int) -> str:
        clause, self._buf = self._buf[:end].strip(), self._buf[end:]
        return clause if any(c.isalnum() for c in clause) else ""


def split_clauses(text: str, **options: int | bool) -> list[str]:
    """Chunk a whole text at once, exactly as it would be chunked while streaming."""
    chunker = ClauseChunker(**options)  # type: ignore[arg-type]
    clauses = chunker.feed(text)
    last = chunker.flush()
    return [*clauses, last] if last else clauses


def split_sentences(text: str) -> list[str]:
    """Whole sentences only: no comma breaks and no length cap (the edge's fallback voice)."""
    return split_clauses(text, first_at_pauses=False, max_first_chars=1 << 30, max_chars=1 << 30)


def unheard_clauses(clauses: list[str], heard: str) -> list[str]:
    """The clauses left after those ``heard`` already holds, in order (a speak-only turn continued by
    another region): ``heard`` is the text of the clauses delivered so far, compared ignoring
    whitespace, as the router joins them. A clause not found in full there starts what is left."""
    want = "".join(heard.split())
    pos = 0
    for i, clause in enumerate(clauses):
        flat = "".join(clause.split())
        if not want.startswith(flat, pos):
            return clauses[i:]
        pos += len(flat)
    return []
