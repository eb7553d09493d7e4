"""The clause chunker: where the streamed answer is cut for TTS."""

from __future__ import annotations

import pytest

from wire.text import ClauseChunker, split_clauses


def stream(text: str, step: int = 1) -> list[str]:
    """Chunk ``text`` fed ``step`` characters at a time, as tokens arrive."""
    chunker = ClauseChunker()
    out: list[str] = []
    for i in range(0, len(text), step):
        out += chunker.feed(text[i : i + step])
    last = chunker.flush()
    return [*out, last] if last else out


def test_first_clause_ends_at_a_comma_later_ones_at_sentences() -> None:
    text = "The capital of France is Paris, a city on the Seine. It is large, old, and busy. Visit it."
    assert stream(text) == [
        "The capital of France is Paris,",
        "a city on the Seine.",
        "It is large, old, and busy.",
        "Visit it.",
    ]


def test_a_short_opening_does_not_split_at_its_comma() -> None:
    assert stream("Sure, I can help with that. Here it is.") == ["Sure, I can help with that.", "Here it is."]


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith and Mrs. Jones met Mr. Brown at St. Paul's today.",
        "Bring fruit e.g. apples or pears and drinks i.e. water.",
        "The bottle holds 3.5 liters and costs 2.99 dollars.",
        "J. R. R. Tolkien wrote it in the U.S. edition.",
    ],
)
def test_abbreviations_decimals_and_initials_never_split(text: str) -> None:
    assert stream(text) == [text]
    assert stream(text, step=3) == [text]


def test_a_decimal_split_across_deltas_is_held_until_the_next_delta() -> None:
    chunker = ClauseChunker()
    assert chunker.feed("It weighs about 3.") == []
    assert chunker.feed("5 kilograms in total. Then") == ["It weighs about 3.5 kilograms in total."]
    assert chunker.flush() == "Then"


def test_questions_exclamations_and_closing_quotes() -> None:
    clauses = stream('He said "stop!" and left. Why? Because.')
    assert clauses == ['He said "stop!"', "and left.", "Why?", "Because."]


def test_a_long_first_clause_without_punctuation_breaks_at_a_space() -> None:
    words = " ".join(["word"] * 40)
    clauses = stream(words + ".")
    assert len(clauses[0]) <= ClauseChunker().max_first_chars
    assert " ".join(clauses) == words + "."


def test_punctuation_only_scraps_are_dropped_and_nothing_is_lost() -> None:
    assert stream("... Hello there, my good friend. !") == ["Hello there,", "my good friend."]
    text = "One, two. Three? Four! Five, six; seven: eight."
    assert " ".join(split_clauses(text)) == text


def test_empty_stream_gives_nothing() -> None:
    assert stream("") == []
    assert stream("   ") == []
