"""Function calling at the edge: ``tools``/``tool_choice`` in ``session.update`` and ``response.create``
travel with the turn; a region's call becomes the GA events and a ``function_call`` item; the
client's ``function_call_output`` and ``response.create`` get an answer from the history.

A ``ScriptedRouter`` stands in for the router and its regions (the edge's handling of a call is under
test, not a model: it records each ``TurnStart``). Real regions and vLLM:
``tests/frameworks/test_openai_sdk_tools.py``; failover timing points: ``tests/router/test_tool_failover.py``.
"""

from __future__ import annotations

import json
from typing import Any

from edge.shared.events import SERVER_EVENT_MODELS
from edge.testing import ScriptedRouter, SessionHarness, ToneVoice, called, memory_services, spoken_reply
from router.api import ClientRefused, Degraded, Routed
from wire.turn import Message, NamedTool, Tool, ToolCall, ToolCalls, TurnDone

WEATHER: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def session_tools(**extra: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", "tools": [WEATHER], **extra}}


async def test_session_tools_and_a_named_choice_echo_and_travel_with_the_turn() -> None:
    router = ScriptedRouter(called("get_weather", '{"city": "Paris"}'))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools(tool_choice={"type": "function", "name": "get_weather"}))
        session = edge.of_type("session.updated")[0]["session"]
        assert session["tools"] == [WEATHER]
        assert session["tool_choice"] == {"type": "function", "name": "get_weather"}
        await edge.say("Weather in Paris?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    start = router.turns[0].start
    assert start.tools == [
        Tool(name="get_weather", description=WEATHER["description"], parameters=WEATHER["parameters"])
    ]
    assert start.tool_choice == NamedTool(name="get_weather")


async def test_a_call_is_emitted_as_ga_events_with_an_edge_call_id_after_the_words_before_it() -> None:
    router = ScriptedRouter(called("get_weather", '{"city": "Paris"}', said="Let me check."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools(tool_choice="required"))
        await edge.say("Weather in Paris?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    types = [e["type"] for e in edge.sent]
    for t in types:  # every event is one the stock SDK parses
        assert t in SERVER_EVENT_MODELS or t.startswith("voicemesh."), t
    added = [e for e in edge.of_type("response.output_item.added") if e["item"]["type"] == "function_call"]
    (call_added,) = added
    item, call_id = call_added["item"], call_added["item"]["call_id"]
    assert call_added["output_index"] == 1 and item["status"] == "in_progress"
    assert call_id.startswith("call_") and "scripted" not in call_id  # the edge's id, not the region's
    (delta,) = edge.of_type("response.function_call_arguments.delta")
    (done,) = edge.of_type("response.function_call_arguments.done")
    assert delta["delta"] == done["arguments"] == '{"city": "Paris"}'
    assert done["name"] == "get_weather" and done["call_id"] == call_id and done["item_id"] == item["id"]
    conv = [e["item"] for e in edge.of_type("conversation.item.done") if e["item"]["type"] == "function_call"]
    assert conv and conv[0]["call_id"] == call_id and conv[0]["arguments"] == '{"city": "Paris"}'
    response = edge.of_type("response.done")[0]["response"]
    assert response["status"] == "completed"
    message, call = response["output"]
    assert message["content"][0]["transcript"] == "Let me check."  # the words before the call are kept
    assert (call["type"], call["call_id"], call["status"]) == ("function_call", call_id, "completed")
    # The call's events come after the audio of the words before it was handed to the player.
    assert types.index("response.function_call_arguments.delta") > types.index(
        "response.output_audio_transcript.delta"
    )


async def test_the_output_fed_back_is_answered_from_the_history() -> None:
    router = ScriptedRouter(called("get_weather", '{"city": "Paris"}'), spoken_reply("It is sunny in Paris."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools(tool_choice="required"))
        await edge.say("Weather in Paris?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
        call_id = edge.of_type("response.function_call_arguments.done")[0]["call_id"]
        output = {"type": "function_call_output", "call_id": call_id, "output": '{"sky": "sunny"}'}
        await edge.send({"type": "conversation.item.create", "item": output})
        await edge.send({"type": "response.create", "response": {"tool_choice": "auto"}})
        await edge.wait_for("response.done", 2)
        history = list(edge.state.history)
    second = router.turns[1].start
    assert second.text == "" and second.tool_choice == "auto"  # no user words: the output is the input
    assert second.history[-2:] == [
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall(id=call_id, name="get_weather", arguments='{"city": "Paris"}'),),
        ),
        Message("tool", '{"sky": "sunny"}', tool_call_id=call_id),
    ]
    assert second.history[0] == Message("user", "Weather in Paris?")
    assert history[-1] == Message("assistant", "It is sunny in Paris.")
    final = edge.of_type("response.done")[1]["response"]
    assert final["status"] == "completed" and [o["type"] for o in final["output"]] == ["message"]


async def test_an_output_for_an_unknown_call_is_refused() -> None:
    async with SessionHarness(memory_services()) as edge:
        output = {"type": "function_call_output", "call_id": "call_nope", "output": "x"}
        await edge.send({"type": "conversation.item.create", "item": output})
    (err,) = edge.of_type("error")
    assert err["error"]["param"] == "item.call_id"


async def test_bad_tools_and_choices_are_refused_naming_the_param() -> None:
    bad_schema = {**WEATHER, "parameters": {"type": "objekt"}}
    cases = [
        ({"tools": [bad_schema]}, "session.tools.0.parameters"),
        ({"tools": [WEATHER, WEATHER]}, "session.tools.1.name"),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "name": "nope"}},
            "session.tool_choice.name",
        ),
        ({"tool_choice": "anything"}, "session.tool_choice"),
    ]
    async with SessionHarness(memory_services()) as edge:
        for session, _param in cases:
            await edge.send({"type": "session.update", "session": {"type": "realtime", **session}})
        assert edge.state.tools == [] and edge.state.tool_choice == "auto"  # nothing applied
    assert [e["error"]["param"] for e in edge.of_type("error")] == [p for _, p in cases]


async def test_response_create_tools_override_the_session_for_that_response_only() -> None:
    router = ScriptedRouter(called("get_weather", '{"city": "Oslo"}'), spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Weather in Oslo?")
        await edge.send(
            {"type": "response.create", "response": {"tools": [WEATHER], "tool_choice": "required"}}
        )
        await edge.wait_for("response.done")
        await edge.say("Thanks.")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done", 2)
    first, second = (t.start for t in router.turns)
    assert [t.name for t in first.tools] == ["get_weather"] and first.tool_choice == "required"
    assert second.tools == [] and second.tool_choice == "auto"


async def test_an_invalid_call_fails_the_response_with_its_reason_and_no_call() -> None:
    refused = ClientRefused(
        code="invalid_tool_call", message="get_weather: city: 'city' is a required property"
    )
    router = ScriptedRouter([Routed(region="r"), refused])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools(tool_choice="required"))
        await edge.say("Weather?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    response = edge.of_type("response.done")[0]["response"]
    assert response["status"] == "failed"
    assert response["status_details"]["error"]["code"] == "invalid_tool_call"
    assert "required property" in response["status_details"]["error"]["message"]
    assert [o["type"] for o in response["output"]] == ["message"]
    assert not edge.of_type("response.function_call_arguments.done")
    assert not edge.of_type("error")  # no client event was at fault


async def test_with_no_region_left_the_fallback_voice_answers_without_a_call() -> None:
    voice = ToneVoice()
    router = ScriptedRouter([Routed(region="r"), Degraded(reason="no_region_available")])
    async with SessionHarness(memory_services(router, fallback=voice)) as edge:
        await edge.send(session_tools(tool_choice="required"))
        await edge.say("Weather?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    response = edge.of_type("response.done")[0]["response"]
    assert [o["type"] for o in response["output"]] == ["message"]
    assert response["metadata"]["served_by"] == "edge" and voice.spoken
    assert not edge.of_type("response.function_call_arguments.done")


async def test_a_second_batch_of_calls_in_one_response_is_never_shown() -> None:
    """Defence in depth: the router passes a turn's calls once; the edge would not repeat one anyway."""
    first = ToolCalls(turn_id="turn", calls=[ToolCall(id="a", name="get_weather", arguments='{"city": "A"}')])
    again = ToolCalls(turn_id="turn", calls=[ToolCall(id="b", name="get_weather", arguments='{"city": "B"}')])
    router = ScriptedRouter(
        [Routed(region="r"), first, again, TurnDone(turn_id="turn", region="r", status="completed")]
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools())
        await edge.say("Weather?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    done = edge.of_type("response.function_call_arguments.done")
    assert [json.loads(d["arguments"]) for d in done] == [{"city": "A"}]


async def test_tools_and_calls_survive_the_session_snapshot() -> None:
    """Sessions are saved as snapshots (Redis when several edges share them; this process's store
    here): tools, the choice and a history with calls and outputs come back as they were."""
    from edge.realtime.session_snapshot import SessionSnapshots
    from edge.stores.memory import LocalStore

    router = ScriptedRouter(called("get_weather", '{"city": "Paris"}'))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(session_tools(tool_choice={"type": "function", "name": "get_weather"}))
        await edge.say("Weather in Paris?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
        call_id = edge.of_type("response.function_call_arguments.done")[0]["call_id"]
        output = {"type": "function_call_output", "call_id": call_id, "output": "sunny"}
        await edge.send({"type": "conversation.item.create", "item": output})
        state = edge.state
    snapshots = SessionSnapshots(LocalStore(), ttl_s=60)
    await snapshots.save(state)
    loaded = await snapshots.load(state.id)
    assert loaded == state and loaded.tool_choice == NamedTool(name="get_weather")
    assert [m.tool_calls[0].id for m in loaded.history if m.tool_calls] == [call_id]
