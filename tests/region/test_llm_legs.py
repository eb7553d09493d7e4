"""``VllmClient``'s side of ``region.legs``, on vLLM's streamed answers held in memory: a first leg
cut before a word starts, its ``Cut``, and a continuation's first word given back the space vLLM
drops (``continue_final_message``: "satellite" + "in the"; seen on the real vLLM, which
``test_llm_stop_after_live.py`` checks)."""

from __future__ import annotations

import json

from region.legs import in_legs
from region.protocols import Cut
from tests.region.test_tools import client_answering
from wire.turn import TokenUsage, TurnStart

MOON = ["The", " Moon", " is", " Earth", "'s", " only", " natural", " satellite", ",", " and", " it", "."]


def counted(*contents: str) -> bytes:
    """vLLM's streamed answer with ``continuous_usage_stats``: each chunk counts the tokens so far
    (one per delta here), then the usage chunk; 10 prompt tokens."""
    chunks = [
        {"choices": [{"delta": {"content": c}}], "usage": {"prompt_tokens": 10, "completion_tokens": i + 1}}
        for i, c in enumerate(contents)
    ]
    chunks.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": len(contents)}})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


async def test_the_first_leg_stops_before_the_first_word_to_start_after_the_cap() -> None:
    for cap, words in ((3, MOON[:3]), (4, MOON[:5]), (8, MOON[:9])):  # "Earth" + "'s"; "satellite" + ","
        client, bodies = client_answering(counted(*MOON))
        start = TurnStart(turn_id="t", text="The Moon?", max_output_tokens=50)
        *out, used = [p async for p in client.stream(start, "The Moon?", stop_after=cap)]
        assert out == words, cap
        assert used == Cut(input_tokens=10, output_tokens=len(words))  # the tokens of its text
        assert bodies[0]["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}


async def test_an_answer_that_ends_past_the_cap_is_not_cut() -> None:
    client, _ = client_answering(counted("Yes", ",", " of", " course", "."))
    start = TurnStart(turn_id="t", text="Hear me?", max_output_tokens=50)
    *out, used = [p async for p in client.stream(start, "Hear me?", stop_after=4)]
    assert "".join(out) == "Yes, of course."  # type: ignore[arg-type]
    assert type(used) is TokenUsage and used.output_tokens == 5


async def test_a_leg_with_nothing_visible_yet_is_cut_at_the_cap() -> None:
    client, _ = client_answering(counted("<think>", "Hmm", " well", "</think>", "Yes", "."))
    start = TurnStart(turn_id="t", text="Hear me?", max_output_tokens=50)
    out = [p async for p in client.stream(start, "Hear me?", stop_after=2)]
    assert out == [Cut(input_tokens=10, output_tokens=2)]  # no word to end at: asked for whole


async def test_a_continuation_gets_back_the_space_vllm_drops() -> None:
    cases = [
        ("The Moon is Earth's only natural satellite", ["in", " the"], " in the"),
        ("The Moon is Earth's only natural satellite", [",", " and"], ", and"),  # leans on the word
        ("The Moon", ["'s", " light"], "'s light"),
        ("Paris is the capital of France.", ["It", "'s"], " It's"),  # a failover's clauses
        ("Paris is the capital of France. ", ["It", "'s"], "It's"),  # a space already there
        ("", ["Hello", "."], "Hello."),  # no continuation
    ]
    for heard, contents, text in cases:
        client, _ = client_answering(counted(*contents))
        start = TurnStart(turn_id="t", transcript="Tell me.", heard_text=heard, max_output_tokens=50)
        out = [p async for p in client.stream(start, "Tell me.") if isinstance(p, str)]
        assert "".join(out) == text, heard


async def test_two_legs_read_as_the_answer_in_one() -> None:
    # The first leg is cut before " only"; vLLM continues with "only" (its space dropped).
    one, second = "".join(MOON), ["only", " natural", " satellite", ",", " and", " it", "."]
    client, bodies = client_answering(counted(*MOON), counted(*second))
    start = TurnStart(turn_id="t", text="The Moon?", max_output_tokens=50)

    async def ready() -> None:
        pass

    out = [p async for p in in_legs(client, start, "The Moon?", 5, ready)]
    assert "".join(p for p in out if isinstance(p, str)) == one
    assert bodies[1]["messages"][-1] == {"role": "assistant", "content": "The Moon is Earth's"}  # type: ignore[index]
    assert out[-1] == TokenUsage(input_tokens=10, output_tokens=5 + len(second))
