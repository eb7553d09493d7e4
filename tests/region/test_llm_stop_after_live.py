"""``stop_after`` on the real vLLM (the first leg of ``region.legs``): the request is checked whole,
decoding stops at the first word to start after that many tokens (counted by the server), and a
second leg continues it into the same text as the answer in one go (vLLM drops the space of a
continuation's first word: the client puts it back)."""

from __future__ import annotations

import pytest

from region.legs import in_legs
from region.llm import VllmClient
from region.protocols import Cut
from voicemesh.profiles import cpu_profile
from wire.errors import LlmRefused
from wire.turn import TurnStart

STORY = "Tell me a long story about a lighthouse keeper."


def client(llm_url: str) -> VllmClient:
    return VllmClient(cpu_profile().llm, llm_url, system_prompt="You are a helpful voice assistant.")


async def one_go(llm: VllmClient, start: TurnStart) -> tuple[str, object]:
    """The answer in one request: its text and its last piece (the usage)."""
    out = [p async for p in llm.stream(start, start.text)]
    return "".join(p for p in out if isinstance(p, str)), out[-1]


async def test_the_stream_stops_before_the_first_word_after_the_tokens_asked(llm_url: str) -> None:
    llm = client(llm_url)
    start = TurnStart(turn_id="t", text=STORY, max_output_tokens=150, temperature=0.0)
    try:
        out = [piece async for piece in llm.stream(start, STORY, stop_after=6)]
        whole, _ = await one_go(llm, start)
    finally:
        await llm.aclose()
    *words, usage = out
    assert isinstance(usage, Cut) and all(isinstance(w, str) for w in words), out
    text = "".join(words)  # type: ignore[arg-type]
    # At least six tokens, ended where the answer in one go has a space: at a word's end.
    assert usage.output_tokens >= 6 and usage.input_tokens > 0, usage
    assert text.strip() == text != "" and whole.startswith(text) and whole[len(text)].isspace(), (text, whole)


async def test_two_legs_read_as_the_answer_in_one_go(llm_url: str) -> None:
    llm = client(llm_url)

    async def ready() -> None:
        pass

    try:
        for prompt in ("Tell me about the Moon.", STORY):
            start = TurnStart(turn_id="t", text=prompt, max_output_tokens=40, temperature=0.0)
            whole, used = await one_go(llm, start)
            for cap in (4, 6, 8):
                out = [p async for p in in_legs(llm, start, prompt, cap, ready)]
                assert "".join(p for p in out if isinstance(p, str)) == whole, (prompt, cap)
                assert out[-1] == used  # each token counted once, the prompt once
    finally:
        await llm.aclose()


async def test_a_request_vllm_refuses_is_refused_before_any_word(llm_url: str) -> None:
    # More answer tokens than the model's context: refused whole, though only six were to be read.
    llm = client(llm_url)
    start = TurnStart(turn_id="t", text=STORY, max_output_tokens=100_000)
    words: list[object] = []
    try:
        with pytest.raises(LlmRefused, match="refused"):
            async for piece in llm.stream(start, STORY, stop_after=6):
                words.append(piece)
    finally:
        await llm.aclose()
    assert words == []
