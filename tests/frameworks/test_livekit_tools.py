"""LiveKit Agents' function calling with its stock OpenAI realtime model (livekit-plugins-openai)
against a real edge, a real region and the real vLLM: a ``@function_tool`` is invoked with the
model's arguments (through LiveKit's own ``execute_function_call``), and its result is spoken.

Driven without a room, as ``AgentActivity`` drives a realtime session: the tool set with
``update_tools``, the spoken question answered with a call (read from the generation's
``function_stream``), the output put into the chat context (``update_chat_ctx``), then
``generate_reply(tool_choice="none")``: what ``AgentActivity`` sends after a tool. SmolLM2-135M calls
no function on ``"auto"``, so the model is built with ``tool_choice="required"``, LiveKit's option.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tests.fixtures.edge import RunningEdge

from .conftest import TURN_TIMEOUT_S, finished_generations, livekit_session

RESULT = {"city": "Paris", "sky": "sunny", "temperature_c": 24}


async def test_a_function_tool_is_invoked_and_its_result_spoken(
    edge: RunningEdge, question_pcm: Callable[[str], bytes]
) -> None:
    from livekit.agents import function_tool, llm

    invoked: list[str] = []

    @function_tool
    async def get_weather(city: str) -> dict[str, Any]:
        """Get the current weather for a city.

        Args:
            city: The city, e.g. Paris
        """
        invoked.append(city)
        return RESULT

    calls: list[Any] = []
    readers: list[asyncio.Task[None]] = []

    async def read_calls(gen: Any) -> None:
        async for call in gen.function_stream:
            calls.append(call)

    async with livekit_session(edge.http_url, edge.api_key, tool_choice="required") as lk:
        lk.session.on("generation_created", lambda gen: readers.append(asyncio.create_task(read_calls(gen))))
        await lk.session.update_tools([get_weather])
        await lk.speak(question_pcm("What is the weather like in Paris today?"))
        await lk.wait_for_event("response.done")
        async with asyncio.timeout(30):
            await asyncio.gather(*readers)  # the function stream closes with the response
        assert [c.name for c in calls] == ["get_weather"], lk.server_events("response.done")

        call = calls[0]
        tool_call = llm.FunctionToolCall(name=call.name, arguments=call.arguments, call_id=call.call_id)
        result = await llm.execute_function_call(tool_call, llm.ToolContext([get_weather]))
        assert not result.fnc_call_out.is_error, result.fnc_call_out.output
        chat_ctx = lk.session.chat_ctx.copy()
        chat_ctx.items.append(result.fnc_call_out)
        await lk.session.update_chat_ctx(chat_ctx)
        async with asyncio.timeout(TURN_TIMEOUT_S):
            await lk.session.generate_reply(tool_choice="none")
        await lk.wait_for_event("response.done", 2)
        await lk.events.wait_for(
            lambda _: any(g["text"] for g in finished_generations(lk)) or bool(lk.errors)
        )

    assert lk.errors == [] and lk.server_events("error") == [], (lk.errors, lk.server_events("error"))
    assert len(invoked) == 1 and invoked[0], invoked  # the function ran once, with the model's city
    outputs = [
        e["item"]
        for e in lk.server_events("conversation.item.done")
        if e["item"]["type"] == "function_call_output"
    ]
    assert len(outputs) == 1 and "sunny" in outputs[0]["output"], outputs  # LiveKit's rendering of RESULT
    final = lk.server_events("response.done")[-1]["response"]
    assert final["status"] == "completed" and [o["type"] for o in final["output"]] == ["message"]
    spoken = [g for g in finished_generations(lk) if g["text"]]
    assert spoken and spoken[-1]["audio"], "the result was not answered in speech"
    print(f"invoked with {invoked}; answer {spoken[-1]['text']!r}")
