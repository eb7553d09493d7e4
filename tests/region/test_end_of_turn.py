"""What the region asks vLLM for the end-of-turn probability (``region/end_of_turn.py``), how it reads
the answer, and that a failure is ``None`` (the edge then decides without the words). The answers
read here are vLLM's shape, written out; the real vLLM is in ``test_end_of_turn_live.py``."""

from __future__ import annotations

import math

import pytest

from region.end_of_turn import VllmEndOfTurn, ending, request_body
from region.llm import VllmClient
from voicemesh.processes import free_port
from voicemesh.profiles import gpu_profile
from wire.turn import Message, TurnStart


def _client(url: str = "http://127.0.0.1:1/v1") -> VllmClient:
    return VllmClient(gpu_profile().llm, url, system_prompt="Be brief.")


def _answer(**probabilities: float) -> dict[str, object]:
    top = [{"token": t, "logprob": math.log(p)} for t, p in probabilities.items()]
    return {"choices": [{"logprobs": {"content": [{"token": "x", "top_logprobs": top}]}}]}


def test_the_users_words_are_left_open_without_whispers_last_punctuation() -> None:
    start = TurnStart(turn_id="t", history=[Message(role="assistant", content="Hello!")], end_of_turn=True)
    body = request_body(_client(), start, "I would like to book a table for. ")
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "I would like to book a table for"},
    ]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["model"] == "qwen3-8b" and body["chat_template_kwargs"] == {"enable_thinking": False}


def test_the_end_token_and_sentence_ends_count_other_tokens_do_not() -> None:
    p = ending(_answer(**{"<|im_end|>": 0.2, ".": 0.3, " ?": 0.1, ",": 0.2, " at": 0.1}), "<|im_end|>")
    assert p == pytest.approx(0.6)
    assert ending(_answer(**{" a": 0.4, " my": 0.1}), "<|im_end|>") == 0.0
    assert gpu_profile().llm.end_of_turn_token == "<|im_end|>"  # Qwen3's template closes with it


def test_an_answer_of_another_shape_raises_for_the_caller_to_classify() -> None:
    with pytest.raises(KeyError):
        ending({"choices": [{"message": {"content": "hi"}}]}, "<|im_end|>")


async def test_no_llm_is_no_probability_and_no_error() -> None:
    llm = _client(f"http://127.0.0.1:{free_port()}/v1")  # nothing listens there: connection refused
    try:
        start = TurnStart(turn_id="t", end_of_turn=True)
        assert await VllmEndOfTurn(llm).probability(start, "What is the capital of France?") is None
        assert await VllmEndOfTurn(llm).probability(start, "  ") is None  # no words: nothing to ask
    finally:
        await llm.aclose()
