"""Function calling in a region: what vLLM is asked for per ``tool_choice``, how its streamed calls are
assembled, and how a turn ends with its calls (after the audio of the words before them) or, when a
call does not validate against its tool's schema, with an ``invalid_tool_call`` error.

The turn tests run a real ``TurnSession`` on stand-in models (``ScriptedLlm`` with ``calls``: the
model's words are not under test here, the protocol around them is). The real vLLM is in
``test_tools_live.py``.
"""

from __future__ import annotations

import json

import pytest

from region.llm import VllmClient
from region.settings import LlmSettings
from region.testing import ScriptedLlm, run_frames, standin_node
from region.tools import CallAssembler, check_call, forced_call
from wire.client import ClauseAudio
from wire.errors import InvalidToolCall
from wire.turn import (
    AudioClause,
    Message,
    NamedTool,
    TextDelta,
    TokenUsage,
    Tool,
    ToolCall,
    ToolCalls,
    TurnDone,
    TurnError,
    TurnStart,
    encode,
)

WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = Tool(name="get_time", description="The time now")
SMOL = LlmSettings(model="m", served_name="m")


def body(start: TurnStart) -> dict[str, object]:
    return VllmClient(SMOL, "http://127.0.0.1:1/v1", system_prompt="Be brief.").request_body(
        start, "Weather?"
    )


def test_auto_passes_the_tools_to_vllm_for_its_tool_parser() -> None:
    b = body(TurnStart(turn_id="t", tools=[WEATHER, TIME]))
    assert b["tool_choice"] == "auto"
    assert b["tools"] == [
        {"type": "function", "function": {"name": "get_weather", "description": WEATHER.description,
                                          "parameters": WEATHER.parameters}},
        {"type": "function", "function": {"name": "get_time", "description": "The time now",
                                          "parameters": {"type": "object", "properties": {}}}},
    ]  # fmt: skip
    assert "response_format" not in b


def test_a_named_choice_asks_for_its_arguments_under_the_tool_schema() -> None:
    b = body(TurnStart(turn_id="t", tools=[WEATHER, TIME], tool_choice=NamedTool(name="get_weather")))
    assert b["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "get_weather", "schema": WEATHER.parameters},
    }
    assert "tools" not in b  # vLLM takes structured output or tools, not both
    system = b["messages"][0]["content"]  # type: ignore[index]
    assert "get_weather" in system and "Current weather for a city" in system and "get_time" not in system


def test_required_asks_for_one_of_the_tools_by_name() -> None:
    b = body(TurnStart(turn_id="t", tools=[WEATHER, TIME], tool_choice="required"))
    schema = b["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    names = [o["properties"]["name"]["enum"] for o in schema["anyOf"]]
    assert names == [["get_weather"], ["get_time"]]


def test_none_and_no_tools_ask_for_a_plain_answer() -> None:
    for start in (TurnStart(turn_id="t", tools=[WEATHER], tool_choice="none"), TurnStart(turn_id="t")):
        b = body(start)
        assert "tools" not in b and "response_format" not in b


def test_history_carries_calls_and_results_in_the_chat_shape() -> None:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
    history = [Message("user", "Weather?"), Message("assistant", "", tool_calls=(call,)),
               Message("tool", "sunny", tool_call_id="call_1")]  # fmt: skip
    b = body(TurnStart(turn_id="t", history=history, tools=[WEATHER]))
    assert b["messages"][2:4] == [  # type: ignore[index]
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "content": "sunny", "tool_call_id": "call_1"},
    ]  # fmt: skip


def test_streamed_call_fragments_assemble_into_whole_calls() -> None:
    calls = CallAssembler()
    calls.feed([{"index": 0, "id": "x", "function": {"name": "get_weather"}}])
    calls.feed(
        [{"index": 0, "function": {"arguments": '{"ci'}}, {"index": 1, "function": {"name": "get_time"}}]
    )
    calls.feed([{"index": 0, "function": {"arguments": 'ty": "Rome"}'}}])
    (weather, time_) = calls.calls()
    assert (weather.id, weather.name, weather.arguments) == ("x", "get_weather", '{"city": "Rome"}')
    assert time_.name == "get_time" and time_.arguments == "{}"


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [('"Paris"', "not a JSON object"), ('{"town": "Paris"}', "required property"),
     ('{"city": 3}', "is not of type"), ("{", "not JSON")],
)  # fmt: skip
def test_arguments_outside_the_schema_are_refused(arguments: str, reason: str) -> None:
    with pytest.raises(InvalidToolCall, match=reason):
        check_call(ToolCall(id="c", name="get_weather", arguments=arguments), [WEATHER])
    with pytest.raises(InvalidToolCall, match="not one of the tools"):
        check_call(ToolCall(id="c", name="get_wether", arguments="{}"), [WEATHER])
    check_call(ToolCall(id="c", name="get_weather", arguments='{"city": "Paris"}'), [WEATHER])


def test_a_forced_answer_becomes_its_call() -> None:
    named = TurnStart(turn_id="t", tools=[WEATHER], tool_choice=NamedTool(name="get_weather"))
    call = forced_call(named, '{ "city": "Paris" }')
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    required = TurnStart(turn_id="t", tools=[WEATHER, TIME], tool_choice="required")
    call = forced_call(required, '{"name": "get_time", "arguments": {}}')
    assert call.name == "get_time" and call.arguments == "{}"
    with pytest.raises(InvalidToolCall, match="not whole JSON"):
        forced_call(named, '{"city": "Par')


def turn(tool_choice: str | NamedTool = "required") -> str:
    return encode(TurnStart(turn_id="t", text="Weather in Paris?", tools=[WEATHER], tool_choice=tool_choice))  # type: ignore[arg-type]


async def test_a_turn_ends_with_its_calls_after_the_audio_of_the_words_before_them() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}')
    node = standin_node(llm=ScriptedLlm("Let me check that. One moment.", calls=[call]))
    sent = await run_frames(node, [turn()], until=TurnDone)
    kinds = [type(m).__name__ for m in sent if not isinstance(m, bytes)]
    (calls,) = [m for m in sent if isinstance(m, ToolCalls)]
    assert calls.calls == [call]
    last_clause = max(i for i, k in enumerate(kinds) if k == "AudioClause")
    assert kinds.index("ToolCalls") > last_clause and kinds[-1] == "TurnDone"
    assert "".join(m.delta for m in sent if isinstance(m, TextDelta)) == "Let me check that. One moment."
    assert next(m for m in sent if isinstance(m, TurnDone)).status == "completed"
    assert not isinstance(sent[-1], ClauseAudio | AudioClause)


async def test_an_invalid_call_ends_the_turn_with_invalid_tool_call_and_sends_no_call() -> None:
    call = ToolCall(id="c1", name="get_weather", arguments='"Paris"')
    node = standin_node(llm=ScriptedLlm("", calls=[call]))
    sent = await run_frames(node, [turn()], until=TurnError)
    (err,) = [m for m in sent if isinstance(m, TurnError)]
    assert err.code == "invalid_tool_call" and err.turn_id == "t" and "not a JSON object" in err.message
    assert not [m for m in sent if isinstance(m, ToolCalls | TurnDone)]


async def test_a_named_choice_for_a_tool_not_given_is_refused_before_any_work() -> None:
    llm = ScriptedLlm()
    sent = await run_frames(standin_node(llm=llm), [turn(NamedTool(name="nope"))], until=TurnError)
    (err,) = [m for m in sent if isinstance(m, TurnError)]
    assert err.code == "invalid_event" and "nope" in err.message and llm.requests == []


def sse(*contents: str) -> bytes:
    """vLLM's streamed chat answer carrying ``contents`` as content deltas, then its usage chunk
    (``stream_options.include_usage``: no choices; here 10 prompt tokens, one per delta)."""
    chunks = [json.dumps({"choices": [{"delta": {"content": c}}]}) for c in contents]
    usage = {"prompt_tokens": 10, "completion_tokens": len(contents), "total_tokens": 10 + len(contents)}
    chunks.append(json.dumps({"choices": [], "usage": usage}))
    return "".join(f"data: {c}\n\n" for c in [*chunks, "[DONE]"]).encode()


def client_answering(*answers: bytes) -> tuple[VllmClient, list[dict[str, object]]]:
    """A ``VllmClient`` whose HTTP goes to an in-memory vLLM answering ``answers`` in turn (the
    stand-in is for the request/answer plumbing; the real vLLM is in ``test_tools_live.py``)."""
    import httpx

    bodies: list[dict[str, object]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, content=answers[min(len(bodies), len(answers)) - 1])

    client = VllmClient(SMOL, "http://vllm.test/v1", system_prompt="Be brief.")
    client._http = httpx.AsyncClient(base_url="http://vllm.test/v1", transport=httpx.MockTransport(handle))
    return client, bodies


async def test_a_forced_call_cut_off_mid_json_is_asked_for_once_more() -> None:
    start = TurnStart(
        turn_id="t", text="Weather?", tools=[WEATHER], tool_choice=NamedTool(name="get_weather")
    )
    client, bodies = client_answering(
        sse('{"city": "Santa', "baric-Santabaric-"), sse('{"city": ', '"Rome"}')
    )
    out = [piece async for piece in client.stream(start, "Weather?")]
    assert len(bodies) == 2 and bodies[0] == bodies[1]
    assert [(c.name, c.arguments) for c in out if isinstance(c, ToolCall)] == [
        ("get_weather", '{"city": "Rome"}')
    ]
    assert not [p for p in out if isinstance(p, str)]  # the JSON is the call, never spoken
    assert out[-1] == TokenUsage(input_tokens=20, output_tokens=4)  # both tries were generated
    assert bodies[0]["stream_options"] == {"include_usage": True}

    client, bodies = client_answering(sse('{"city": "Sant'))
    with pytest.raises(InvalidToolCall, match="not whole JSON"):
        [piece async for piece in client.stream(start, "Weather?")]
    assert len(bodies) == 2  # asked twice, then reported


async def test_auto_calls_stream_after_the_words_before_them() -> None:
    call = {"index": 0, "id": "x", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    tool_chunk = {"choices": [{"delta": {"tool_calls": [call]}}]}
    body = sse("Let me ", "check.")[: -len(b"data: [DONE]\n\n")]
    body += f"data: {json.dumps(tool_chunk)}\n\ndata: [DONE]\n\n".encode()
    client, bodies = client_answering(body)
    out = [
        piece async for piece in client.stream(TurnStart(turn_id="t", text="Oslo?", tools=[WEATHER]), "Oslo?")
    ]
    *words, call_out, usage = out
    assert (
        words == ["Let me ", "check."] and isinstance(call_out, ToolCall) and call_out.name == "get_weather"
    )
    assert usage == TokenUsage(input_tokens=10, output_tokens=2)  # last, whatever the chunk order
    assert bodies[0]["tool_choice"] == "auto"
