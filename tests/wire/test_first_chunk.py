"""A first audio chunk of a few words (``ClauseChunker.first_words``): where it is cut, and that no
word is ever cut in two, however the answer's deltas split the text."""

from __future__ import annotations

import random

import pytest

from wire.text import ClauseChunker, split_clauses

ANSWERS = [
    "Once upon a time there was a small cat named Whiskers who lived in a quiet house. She liked fish.",
    "The capital of France is Paris, a city on the Seine. It is large, old, and busy.",
    "I went to the store with my friend because we needed bread and milk for breakfast.",
    "Sure, I can help with that. Here it is.",
    "It weighs about 3.5 kilograms in total, which is heavy for a cat. Then it sleeps.",
    "Dr. Smith and J. R. Jones met at the park yesterday to talk about the weather.",
    "Yes.",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism floccinaucinihilipilification "
    "pneumonoultramicroscopicsilicovolcanoconiosis is a long first sentence indeed.",
]


def stream(text: str, pieces: list[int], words: int = 4) -> list[str]:
    """Chunk ``text`` fed in deltas of the given sizes (cycled), as tokens arrive."""
    chunker = ClauseChunker(first_words=words)
    out: list[str] = []
    i = k = 0
    while i < len(text):
        size = pieces[k % len(pieces)]
        out += chunker.feed(text[i : i + size])
        i, k = i + size, k + 1
    last = chunker.flush()
    return [*out, last] if last else out


@pytest.mark.parametrize("text", ANSWERS)
def test_no_word_is_ever_cut_however_the_deltas_split_it(text: str) -> None:
    rng = random.Random(text)
    splits = [[1], [2], [3], [5], [7], *([rng.randint(1, 9) for _ in range(30)] for _ in range(20))]
    for pieces in splits:
        clauses = stream(text, pieces)
        # Every clause is a run of the text's own words: a word cut in two would add a word.
        assert [w for c in clauses for w in c.split()] == text.split(), (pieces, clauses)
        assert clauses == split_clauses(text, first_words=4)  # the same cut, streamed or whole


@pytest.mark.parametrize(
    ("text", "first"),
    [
        (ANSWERS[0], "Once upon a time"),
        (ANSWERS[1], "The capital of France"),  # the words come before the comma
        (ANSWERS[2], "I went to the store"),  # never ends on "the"
        (ANSWERS[4], "It weighs about 3.5"),
        (ANSWERS[5], "Dr. Smith and J. R. Jones"),  # nor on "and", an initial or an abbreviation
        ("Hello, my friend, how are you today?", "Hello, my friend,"),  # an early comma still wins
        ("Yes. I can do that for you right now.", "Yes."),  # so does a sentence end
    ],
)
def test_the_first_chunk_is_its_first_few_words(text: str, first: str) -> None:
    clauses = stream(text, [1])
    assert clauses[0] == first


def test_later_clauses_stay_whole_sentences() -> None:
    clauses = stream(ANSWERS[1] + " Visit it, or do not, as you like.", [3])
    assert clauses == [
        "The capital of France",
        "is Paris, a city on the Seine.",
        "It is large, old, and busy.",
        "Visit it, or do not, as you like.",
    ]


def test_a_word_still_arriving_is_held_until_its_end_is_seen() -> None:
    chunker = ClauseChunker(first_words=4)
    assert chunker.feed("Once upon a ti") == []
    assert chunker.feed("me") == []  # "time" may still be "times": no whitespace after it yet
    assert chunker.feed(" there") == ["Once upon a time"]
    assert chunker.flush() == "there"


def test_off_by_default() -> None:
    assert ClauseChunker().first_words == 0
    assert split_clauses(ANSWERS[0]) == [
        "Once upon a time there was a small cat named Whiskers who lived in a quiet house.",
        "She liked fish.",
    ]
