"""Function calls from the real vLLM (SmolLM2 on the cpu profile) through the region's own client:
a forced call (a named function, or ``"required"`` among two tools) comes back whole and valid
against its tool's schema, and an answer to a call's output is plain text."""

from __future__ import annotations

import json

import pytest

from region.llm import VllmClient
from region.tools import check_call
from voicemesh.profiles import cpu_profile
from wire.turn import Message, NamedTool, TokenUsage, Tool, ToolCall, ToolChoice, TurnStart

WEATHER = Tool(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = Tool(
    name="get_time",
    description="Get the time now in a time zone.",
    parameters={"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]},
)


@pytest.mark.parametrize("choice", [NamedTool(name="get_weather"), "required"])
async def test_a_forced_call_comes_back_whole_and_valid(llm_url: str, choice: ToolChoice) -> None:
    client = VllmClient(cpu_profile().llm, llm_url, system_prompt="You are a helpful voice assistant.")
    start = TurnStart(
        turn_id="t", text="What is the weather in Paris?", tools=[WEATHER, TIME], tool_choice=choice
    )
    try:
        out = [piece async for piece in client.stream(start, "What is the weather in Paris?")]
    finally:
        await client.aclose()
    calls = [p for p in out if isinstance(p, ToolCall)]
    assert len(calls) == 1 and not [p for p in out if isinstance(p, str)], out
    check_call(calls[0], [WEATHER, TIME])  # raises unless valid against its schema
    if isinstance(choice, NamedTool):
        assert calls[0].name == "get_weather" and json.loads(calls[0].arguments)["city"]


async def test_an_answer_to_a_call_output_is_text(llm_url: str) -> None:
    client = VllmClient(cpu_profile().llm, llm_url, system_prompt="You are a helpful voice assistant.")
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
    history = [
        Message("user", "What is the weather in Paris?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"sky": "sunny", "temperature_c": 24}', tool_call_id="call_1"),
    ]
    start = TurnStart(turn_id="t", text="", history=history, tools=[WEATHER], tool_choice="none")
    try:
        out = [piece async for piece in client.stream(start, "")]
    finally:
        await client.aclose()
    *words, usage = out
    assert all(isinstance(p, str) for p in words) and "".join(map(str, words)).strip()
    # vLLM's own count: the prompt holds the history and the tool's output; the answer its words.
    assert isinstance(usage, TokenUsage) and usage.input_tokens > 20 and usage.output_tokens > 0
