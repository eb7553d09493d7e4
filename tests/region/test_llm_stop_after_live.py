"""``stop_after`` on the real vLLM (the first leg of ``region.legs``): the request is checked whole,
and decoding stops after that many tokens, counted by the server."""

from __future__ import annotations

import pytest

from region.llm import VllmClient
from voicemesh.profiles import cpu_profile
from wire.errors import LlmRefused
from wire.turn import TokenUsage, TurnStart

pytestmark = pytest.mark.slow

STORY = "Tell me a long story about a lighthouse keeper."


async def test_the_stream_stops_after_the_tokens_asked_and_counts_them(llm_url: str) -> None:
    client = VllmClient(cpu_profile().llm, llm_url, system_prompt="You are a helpful voice assistant.")
    start = TurnStart(turn_id="t", text=STORY, max_output_tokens=150)
    try:
        out = [piece async for piece in client.stream(start, STORY, stop_after=6)]
    finally:
        await client.aclose()
    *words, usage = out
    assert isinstance(usage, TokenUsage) and all(isinstance(w, str) for w in words), out
    # One token per chunk from vLLM: stopped at six (a chunk of two would make it seven).
    assert 6 <= usage.output_tokens <= 7, usage
    assert usage.input_tokens > 0 and "".join(words).strip()  # type: ignore[arg-type]


async def test_a_request_vllm_refuses_is_refused_before_any_word(llm_url: str) -> None:
    # More answer tokens than the model's context: refused whole, though only six were to be read.
    client = VllmClient(cpu_profile().llm, llm_url, system_prompt="You are a helpful voice assistant.")
    start = TurnStart(turn_id="t", text=STORY, max_output_tokens=100_000)
    words: list[object] = []
    try:
        with pytest.raises(LlmRefused, match="refused"):
            async for piece in client.stream(start, STORY, stop_after=6):
                words.append(piece)
    finally:
        await client.aclose()
    assert words == []
