"""The think filter: no ``<think>`` block reaches the text or the voice, however the tags are split."""

from __future__ import annotations

import pytest

from region.think import ThinkFilter


def run(deltas: list[str]) -> str:
    f = ThinkFilter()
    return "".join(f.feed(d) for d in deltas) + f.flush()


def test_empty_block_and_its_blank_lines_are_removed() -> None:
    # What Qwen3 emits with enable_thinking=False.
    assert run(["<think>\n\n</think>\n\n", "Paris is the capital."]) == "Paris is the capital."


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_tags_split_across_any_delta_boundary(size: int) -> None:
    text = "<think>The user asks about France. Paris.</think>\n\nThe capital is Paris."
    deltas = [text[i : i + size] for i in range(0, len(text), size)]
    assert run(deltas) == "The capital is Paris."


def test_text_that_only_looks_like_a_tag_is_kept() -> None:
    kept = run(["a <b>bold</b> claim < 3 and <thin", "king> cap"])
    assert kept == "a <b>bold</b> claim < 3 and <thinking> cap"
    assert run(["ends with <thi"]) == "ends with <thi"


def test_an_unclosed_block_is_dropped() -> None:
    assert run(["Hello. <think>secret plan", " never closed"]) == "Hello. "


def test_a_block_in_the_middle_is_removed() -> None:
    assert run(["One. <think>hmm", "</think>Two."]) == "One. Two."
