"""``response.create`` honours its parameters: ``instructions`` (for that response only),
``max_output_tokens`` (``"inf"`` included), ``metadata`` (echoed), ``conversation: "none"`` (out of
band), ``input`` items; a response with nothing pending (a greeting) is answered; and every
``response.done`` carries ``usage``.

Fast tier: ``edge.testing`` stand-ins. The scripted router records the ``TurnStart`` each response
sent, which is what is under test: the instructions, history, user words and token budget a region
would get.
"""

from __future__ import annotations

from typing import Any

from openai.types.realtime.realtime_response_usage import RealtimeResponseUsage

from edge.shared.limits import estimate_tokens
from edge.testing import ScriptedRouter, SessionHarness, memory_services, silence, spoken_reply, tone
from wire.turn import Message, TokenUsage, Transcript, TurnDone


def _create(**response: Any) -> dict[str, Any]:
    return {"type": "response.create", "event_id": "evt_create", "response": response}


async def _respond(edge: SessionHarness, **response: Any) -> dict[str, Any]:
    """``response.create`` with ``response``; the ``response.done`` it ends with."""
    count = len(edge.of_type("response.done")) + 1
    await edge.send(_create(**response))
    await edge.wait_for("response.done", count)
    return edge.of_type("response.done")[-1]["response"]  # type: ignore[no-any-return]


def _harness(*replies: str) -> tuple[ScriptedRouter, SessionHarness]:
    router = ScriptedRouter(*(spoken_reply(r) for r in replies or ("Hi there.",)))
    return router, SessionHarness(memory_services(router))


async def test_a_greeting_with_nothing_pending_is_answered_from_the_instructions() -> None:
    router, harness = _harness("Hello! How can I help?")
    async with harness as edge:
        # LiveKit's generate_reply(instructions=...): session instructions + the greeting's.
        done = await _respond(edge, instructions="Greet the user.", metadata={"client_event_id": "e1"})
    (turn,) = router.turns
    assert turn.start.text == "" and turn.audio is None and turn.start.history == []
    assert turn.start.instructions == "Greet the user."
    assert done["status"] == "completed" and edge.of_type("error") == []
    assert edge.state.history == [Message(role="assistant", content="Hello! How can I help?")]


async def test_metadata_is_echoed_in_created_and_done_beside_the_edges_own() -> None:
    _, harness = _harness()
    async with harness as edge:
        await edge.say("Hello?")
        done = await _respond(edge, metadata={"client_event_id": "response_create_abc", "k": "v"})
    created = edge.of_type("response.created")[0]["response"]
    assert created["metadata"] == {"client_event_id": "response_create_abc", "k": "v"}
    assert done["metadata"].pop("voicemesh_stages")  # edge/responses/stages.py
    assert done["metadata"] == {
        "client_event_id": "response_create_abc",
        "k": "v",
        "voicemesh_region": "scripted",
    }
    assert created["id"] == done["id"]


async def test_instructions_and_max_output_tokens_are_for_that_response_only() -> None:
    router, harness = _harness()
    async with harness as edge:
        await edge.say("One?")
        first = await _respond(edge, instructions="Answer in French.", max_output_tokens=30)
        await edge.say("Two?")
        await _respond(edge)
    one, two = router.turns
    assert (one.start.instructions, one.start.max_output_tokens) == ("Answer in French.", 30)
    assert first["max_output_tokens"] == 30
    state = edge.state
    assert (two.start.instructions, two.start.max_output_tokens) == (
        state.instructions,
        state.max_output_tokens,
    )


async def test_inf_max_output_tokens_is_the_cap_within_the_context() -> None:
    router, harness = _harness()
    async with harness as edge:
        content = edge.services.settings.limits.content
        await edge.say("Hi?")
        done = await _respond(edge, max_output_tokens="inf")
        # Long instructions leave less room in the context: "inf" takes what is left, not an error.
        long = "Be kind. " * 400
        await edge.say("Hi?")
        await _respond(edge, max_output_tokens="inf", instructions=long)
    assert done["max_output_tokens"] == "inf" and edge.of_type("error") == []
    assert router.turns[0].start.max_output_tokens == content.max_output_tokens
    room = content.context_tokens - content.reserved_tokens - estimate_tokens(long) - estimate_tokens("Hi?")
    assert router.turns[1].start.max_output_tokens == room < content.max_output_tokens


async def test_an_out_of_band_response_leaves_the_conversation_as_it_was() -> None:
    router, harness = _harness("Sunny.", "A chat about weather.")
    async with harness as edge:
        await edge.say("Weather?")
        await _respond(edge)
        history = list(edge.state.history)
        items_before = len(edge.of_type("conversation.item.added"))
        done = await _respond(edge, conversation="none", instructions="Summarise the conversation.")
    assert history == [Message("user", "Weather?"), Message("assistant", "Sunny.")]
    assert edge.state.history == history
    assert len(edge.of_type("conversation.item.added")) == items_before
    assert done["conversation_id"] is None and done["status"] == "completed"
    assert done["output"][0]["content"][0]["transcript"] == "A chat about weather."
    oob = router.turns[1].start
    assert (oob.history, oob.text, oob.instructions) == (history, "", "Summarise the conversation.")


async def test_input_items_are_answered_instead_of_the_pending_input() -> None:
    router, harness = _harness("Four.", "Hello to you.")
    async with harness as edge:
        await edge.say("Hello?")
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "2+2?"}]}
        said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Ask."}]}
        await _respond(edge, input=[said, item], conversation="none")
        await _respond(edge)  # the conversation's own pending input is still there to answer
    first, second = router.turns
    assert (first.start.history, first.start.text) == ([Message("assistant", "Ask.")], "2+2?")
    assert second.start.text == "Hello?"
    assert edge.state.history == [Message("user", "Hello?"), Message("assistant", "Hello to you.")]


async def test_usage_in_response_done_has_the_openai_shape() -> None:
    # The region echoes a typed turn's text as its transcript: it is counted once.
    router = ScriptedRouter([Transcript(turn_id="turn", text="Hello?"), *spoken_reply("Hi there.")])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Hello?")
        done = await _respond(edge)
    usage = RealtimeResponseUsage.model_validate(done["usage"])
    assert usage.output_tokens == estimate_tokens("Hi there.")
    expected_input = estimate_tokens(edge.state.instructions) + estimate_tokens("Hello?")
    assert usage.input_tokens == expected_input
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_token_details is not None and usage.input_token_details.text_tokens == expected_input
    assert "usage" not in edge.of_type("response.created")[0]["response"]


async def test_usage_is_the_llms_own_count_when_the_region_gives_one() -> None:
    reply = spoken_reply("Hi there.")
    done_event = reply[-1]
    assert isinstance(done_event, TurnDone)
    done_event.usage = TokenUsage(input_tokens=123, output_tokens=7)
    async with SessionHarness(memory_services(ScriptedRouter(reply))) as edge:
        await edge.say("Hello?")
        done = await _respond(edge)
    usage = RealtimeResponseUsage.model_validate(done["usage"])
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (123, 7, 130)
    # The key's usage is booked from the same count (``edge/tenancy/accounting.py``).
    totals = await edge.services.accounting.usage.totals(edge.state.key_id)
    assert (totals["input_tokens"], totals["output_tokens"]) == (123, 7)


async def test_bad_params_are_refused_naming_the_param_and_nothing_starts() -> None:
    router, harness = _harness()
    system = {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Obey."}]}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "response.metadata"),
        ({"metadata": {"k": "v" * 513}}, "response.metadata.k"),
        ({"metadata": {"k" * 65: "v"}}, "response.metadata"),
        ({"max_output_tokens": 0}, "response.max_output_tokens"),
        ({"max_output_tokens": 100_000}, "response.max_output_tokens"),
        ({"conversation": "conv_123"}, "response.conversation"),
        ({"input": [system]}, "response.input.0.role"),
        ({"instructions": "x" * 5_000}, "response.instructions"),
    ]
    async with harness as edge:
        await edge.say("Hello?")
        for response, param in cases:
            before = len(edge.sent)
            await edge.send(_create(**response))
            (error,) = edge.sent[before:]
            assert error["type"] == "error", response
            assert (error["error"]["param"], error["error"]["event_id"]) == (param, "evt_create")
        assert router.turns == []
        done = await _respond(edge)  # the pending input is still there
    assert done["status"] == "completed" and router.turns[0].start.text == "Hello?"


async def test_usage_of_a_spoken_turn_counts_its_transcript() -> None:
    router = ScriptedRouter([Transcript(turn_id="turn", text="what time is it"), *spoken_reply("Noon.")])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.done")
    usage = edge.of_type("response.done")[0]["response"]["usage"]
    instructions = estimate_tokens(edge.state.instructions)
    assert usage["input_tokens"] == instructions + estimate_tokens("what time is it")
    assert usage["output_tokens"] == estimate_tokens("Noon.")
