"""Conversation item events as the OpenAI GA Realtime API serves them: ``conversation.item.truncate``
(``.truncated``), ``.delete`` (``.deleted``), ``.retrieve`` (``.retrieved``),
``output_audio_buffer.clear`` (``.cleared``), and one ``previous_item_id`` chain through every item,
the assistant items of responses included (LiveKit mirrors the chat from it).

Fast tier: ``edge.testing`` stand-ins (scripted router, energy VAD, tone voice) where the models are
not what is under test; the session, conversation, playback and response logic are the real ones.
A scripted clause is 100 ms of tone, so a reply's audio timeline is known to the millisecond.
"""

from __future__ import annotations

from typing import Any

from edge.testing import (
    Hold,
    ScriptedRouter,
    SessionHarness,
    clause,
    memory_services,
    silence,
    spoken_reply,
    tone,
)
from router.api import Routed
from wire.turn import Message, TextDelta, Transcript, TurnDone

THREE_CLAUSES = "First clause. Second clause. Third clause."
"""Three sentences: three 100 ms clauses, ending at 100, 200 and 300 ms of the reply's audio."""


def held_reply() -> tuple[Hold, list[Any]]:
    """A reply whose first clause plays, then waits at ``hold`` before its second."""
    hold = Hold()
    script = [
        Routed(region="scripted"),
        TextDelta(turn_id="turn", delta="First. "),
        clause("First.", index=0),
        hold,
        TextDelta(turn_id="turn", delta="Second."),
        clause("Second.", index=1),
        TurnDone(turn_id="turn", region="scripted", status="completed", text="First. Second."),
    ]
    return hold, script


async def ask(edge: SessionHarness, text: str, responses: int) -> None:
    """A typed user turn and its response (the ``responses``-th of the session)."""
    await edge.say(text)
    await edge.send({"type": "response.create"})
    await edge.wait_for("response.done", responses)


def assistant_item(edge: SessionHarness, n: int = 0) -> str:
    """The id of the session's ``n``-th assistant item."""
    items = [e["item"] for e in edge.of_type("conversation.item.added")]
    ids: list[str] = [i["id"] for i in items if i["role"] == "assistant"]
    return ids[n]


def last_error(edge: SessionHarness) -> dict[str, Any]:
    event = edge.sent[-1]
    assert event["type"] == "error", event
    error: dict[str, Any] = event["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    return error


def truncate(item_id: str, audio_end_ms: int, content_index: int = 0) -> dict[str, Any]:
    return {
        "type": "conversation.item.truncate",
        "event_id": "evt_trunc",
        "item_id": item_id,
        "content_index": content_index,
        "audio_end_ms": audio_end_ms,
    }


def delete(item_id: str) -> dict[str, Any]:
    return {"type": "conversation.item.delete", "event_id": "evt_delete", "item_id": item_id}


def retrieve(item_id: str) -> dict[str, Any]:
    return {"type": "conversation.item.retrieve", "event_id": "evt_retrieve", "item_id": item_id}


# -- the chain ---------------------------------------------------------------------------------------


async def test_every_item_is_chained_to_the_one_before_it_over_several_turns() -> None:
    """user, assistant, user, assistant, a spoken user turn, assistant: each ``previous_item_id`` is
    the item added just before, in ``added`` and ``done`` alike, and the committed buffer's too."""
    router = ScriptedRouter(
        spoken_reply("One."),
        spoken_reply("Two."),
        [Transcript(turn_id="t", text="and three"), *spoken_reply("Three.")],
    )
    async with SessionHarness(memory_services(router)) as edge:
        await ask(edge, "first", 1)
        await ask(edge, "second", 2)
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.done", 3)
        added = edge.of_type("conversation.item.added")
        assert [e["item"]["role"] for e in added] == ["user", "assistant"] * 3
        ids = [e["item"]["id"] for e in added]
        assert [e["previous_item_id"] for e in added] == [None, *ids[:-1]]
        done = {e["item"]["id"]: e["previous_item_id"] for e in edge.of_type("conversation.item.done")}
        assert done == {e["item"]["id"]: e["previous_item_id"] for e in added}
        (committed,) = edge.of_type("input_audio_buffer.committed")
        assert (committed["item_id"], committed["previous_item_id"]) == (ids[4], ids[3])
        # The history is the items in that order.
        assert edge.state.history == [
            Message("user", "first"),
            Message("assistant", "One."),
            Message("user", "second"),
            Message("assistant", "Two."),
            Message("user", "and three"),
            Message("assistant", "Three."),
        ]
        assert router.turns[2].start.history == edge.state.history[:4]


async def test_items_can_be_put_at_the_root_or_after_a_given_item() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.say("b", role="assistant")
        await edge.say("d", role="assistant")
        first, second = (e["item"]["id"] for e in edge.of_type("conversation.item.added"))
        for text, previous in (("a", "root"), ("c", first)):
            content = [{"type": "output_text", "text": text}]
            item = {"type": "message", "role": "assistant", "content": content}
            await edge.send({"type": "conversation.item.create", "previous_item_id": previous, "item": item})
        added = edge.of_type("conversation.item.added")
        assert [e["previous_item_id"] for e in added[2:]] == [None, first]
        assert [m.content for m in edge.state.history] == ["a", "b", "c", "d"]
        await edge.say("e", role="assistant")
        assert edge.of_type("conversation.item.added")[-1]["previous_item_id"] == second
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
        await edge.send({"type": "conversation.item.create", "previous_item_id": "item_nope", "item": item})
        assert last_error(edge)["param"] == "previous_item_id"
        assert len(edge.of_type("conversation.item.added")) == 5


# -- truncate ----------------------------------------------------------------------------------------


async def test_truncate_keeps_what_was_heard_and_the_next_turn_sees_only_that() -> None:
    router = ScriptedRouter(spoken_reply(THREE_CLAUSES), spoken_reply("Ok."))
    async with SessionHarness(memory_services(router)) as edge:
        await ask(edge, "tell me", 1)
        item_id = assistant_item(edge)
        assert edge.state.history[-1] == Message("assistant", THREE_CLAUSES)
        await edge.send(truncate(item_id, 250))  # mid third clause: it was not heard
        truncated = edge.sent[-1]
        assert truncated["type"] == "conversation.item.truncated"
        assert (truncated["item_id"], truncated["content_index"], truncated["audio_end_ms"]) == (
            item_id,
            0,
            250,
        )
        heard = Message("assistant", "First clause. Second clause.")
        assert edge.state.history[-1] == heard
        await edge.send({"type": "conversation.item.retrieve", "item_id": item_id})
        retrieved = edge.sent[-1]["item"]
        assert retrieved["content"] == [{"type": "output_audio", "transcript": heard.content}]
        # The audio now ends at 250 ms: truncating past it is refused, before it is fine.
        await edge.send(truncate(item_id, 260))
        assert (last_error(edge)["code"], last_error(edge)["param"]) == ("invalid_value", "audio_end_ms")
        await edge.send(truncate(item_id, 0))
        assert edge.sent[-1]["type"] == "conversation.item.truncated"
        assert edge.state.history == [Message("user", "tell me")]  # nothing heard: no message
        await ask(edge, "again", 2)
        assert router.turns[1].start.history == [Message("user", "tell me")]


async def test_truncating_at_the_end_of_the_audio_keeps_the_whole_answer() -> None:
    """Pipecat truncates at ``min(elapsed, audio received)``: the full length is valid."""
    async with SessionHarness(memory_services(ScriptedRouter(spoken_reply(THREE_CLAUSES)))) as edge:
        await ask(edge, "tell me", 1)
        await edge.send(truncate(assistant_item(edge), 300))
        assert edge.sent[-1]["type"] == "conversation.item.truncated"
        assert edge.state.history[-1] == Message("assistant", THREE_CLAUSES)


async def test_truncating_the_playing_item_stops_its_audio_like_a_cancel() -> None:
    hold, script = held_reply()
    router = ScriptedRouter(script, spoken_reply("Next."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("go on")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta")
        item_id = assistant_item(edge)
        await edge.send(truncate(item_id, 100))  # the first clause, all of it
        types = [e["type"] for e in edge.sent]
        assert types.index("response.done") < types.index("conversation.item.truncated")
        done = edge.of_type("response.done")[0]["response"]
        assert (done["status"], done["status_details"]["reason"]) == ("cancelled", "client_cancelled")
        assert router.turns[0].closed_early  # the region's turn was cancelled
        assert edge.state.history[-1] == Message("assistant", "First.")
        assert not edge.of_type("response.output_audio_transcript.delta")[1:]  # "Second." never came
        hold.release()
        await ask(edge, "next", 2)
        assert router.turns[1].start.history == [Message("user", "go on"), Message("assistant", "First.")]


async def test_a_bad_truncate_of_the_playing_item_changes_nothing() -> None:
    hold, script = held_reply()
    async with SessionHarness(memory_services(ScriptedRouter(script))) as edge:
        await edge.say("go on")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta")
        await edge.send(truncate(assistant_item(edge), 5_000))  # only 100 ms were sent
        error = last_error(edge)
        assert (error["code"], error["param"], error["event_id"]) == (
            "invalid_value",
            "audio_end_ms",
            "evt_trunc",
        )
        assert "already shorter than" in error["message"]
        assert edge.session.responses.response is not None  # still playing
        hold.release()
        await edge.wait_for("response.done")
        assert edge.of_type("response.done")[0]["response"]["status"] == "completed"
        assert edge.state.history[-1] == Message("assistant", "First. Second.")


async def test_barge_in_then_truncate_as_pipecat_does() -> None:
    """Server VAD cancels the answer at speech start; the client then truncates the item to what it
    played; the second turn of the session sees only that."""
    hold, script = held_reply()
    router = ScriptedRouter(
        [Transcript(turn_id="t", text="tell me"), *script],
        [Transcript(turn_id="t", text="stop"), *spoken_reply("Ok.")],
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.turn_detection(type="server_vad", voicemesh_backchannel=False)  # cancelled at speech start
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.output_audio.delta")
        item_id = assistant_item(edge)
        await edge.append_audio(tone(0.6))  # talking over the answer
        await edge.wait_for("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert (done["status"], done["status_details"]["reason"]) == ("cancelled", "turn_detected")
        await edge.send(truncate(item_id, 60))  # the client had played 60 ms of it
        assert edge.sent[-1]["type"] == "conversation.item.truncated"
        await edge.append_audio(silence(0.8))
        await edge.wait_for("response.done", 2)
        hold.release()
        assert router.turns[1].start.history == [Message("user", "tell me")]
        assert edge.state.history[-2:] == [Message("user", "stop"), Message("assistant", "Ok.")]
        assert not [e for e in edge.sent if e["type"] == "error"]


# -- delete and retrieve -----------------------------------------------------------------------------


async def test_delete_takes_an_item_out_of_history_and_the_chain() -> None:
    router = ScriptedRouter(spoken_reply("One."), spoken_reply("Two."))
    async with SessionHarness(memory_services(router)) as edge:
        await ask(edge, "keep me", 1)
        await edge.say("forget me")
        forget = edge.of_type("conversation.item.added")[-1]["item"]["id"]
        await edge.send({"type": "conversation.item.delete", "item_id": forget})
        assert (edge.sent[-1]["type"], edge.sent[-1]["item_id"]) == ("conversation.item.deleted", forget)
        await edge.say("next")
        assert edge.of_type("conversation.item.added")[-1]["previous_item_id"] == assistant_item(edge)
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done", 2)
        assert router.turns[1].start.text == "next"
        assert router.turns[1].start.history == [Message("user", "keep me"), Message("assistant", "One.")]
        await edge.send({"type": "conversation.item.delete", "item_id": assistant_item(edge, 0)})
        assert edge.state.history == [
            Message("user", "keep me"),
            Message("user", "next"),
            Message("assistant", "Two."),
        ]


async def test_deleting_a_pending_audio_item_leaves_nothing_to_answer() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send(
            {
                "type": "session.update",
                "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
            }
        )
        await edge.append_audio(tone(0.3))
        await edge.send({"type": "input_audio_buffer.commit"})
        item_id = edge.of_type("input_audio_buffer.committed")[0]["item_id"]
        await edge.send({"type": "conversation.item.delete", "item_id": item_id})
        assert edge.sent[-1]["type"] == "conversation.item.deleted"
        assert edge.session.conversation.find(item_id) is None
        assert edge.session.conversation.last_item_id is None


async def test_retrieve_returns_each_item_as_the_api_shapes_it() -> None:
    router = ScriptedRouter([Transcript(turn_id="t", text="hello there"), *spoken_reply("Hi.")])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("typed")
        await edge.append_audio(silence(0.3) + tone(0.6) + silence(0.8))
        await edge.wait_for("response.done")
        typed, spoken, answer = (e["item"]["id"] for e in edge.of_type("conversation.item.added"))
        retrieved = []
        for item_id in (typed, spoken, answer):
            await edge.send({"type": "conversation.item.retrieve", "item_id": item_id})
            assert edge.sent[-1]["type"] == "conversation.item.retrieved"
            retrieved.append(edge.sent[-1]["item"])
        common = {"object": "realtime.item", "type": "message", "status": "completed"}
        assert retrieved == [
            {"id": typed, "role": "user", "content": [{"type": "input_text", "text": "typed"}], **common},
            {
                "id": spoken,
                "role": "user",
                "content": [{"type": "input_audio", "transcript": "hello there"}],
                **common,
            },
            {
                "id": answer,
                "role": "assistant",
                "content": [{"type": "output_audio", "transcript": "Hi."}],
                **common,
            },
        ]


# -- bad input ---------------------------------------------------------------------------------------


async def test_bad_item_events_get_the_api_errors_and_the_session_carries_on() -> None:
    router = ScriptedRouter(spoken_reply(THREE_CLAUSES), spoken_reply("Still here."))
    async with SessionHarness(memory_services(router)) as edge:
        await ask(edge, "tell me", 1)
        answer = assistant_item(edge)
        user = edge.of_type("conversation.item.added")[0]["item"]["id"]
        cases: list[tuple[dict[str, Any], str, str]] = [
            (truncate("item_nope", 10), "item_truncate_invalid_item_id", "item_id"),
            (truncate(answer, 301), "invalid_value", "audio_end_ms"),  # the audio is 300 ms
            (truncate(answer, 100, content_index=1), "invalid_value", "content_index"),
            (truncate(user, 10), "invalid_value", "item_id"),  # only assistant audio truncates
            (retrieve("item_nope"), "item_retrieve_invalid_item_id", "item_id"),
            (delete("item_nope"), "item_delete_invalid_item_id", "item_id"),
        ]
        for event, code, param in cases:
            await edge.send(event)
            error = last_error(edge)
            assert (error["code"], error["param"]) == (code, param), event
        assert "Audio content of 300ms is already shorter than 301ms" in edge.sent[-5]["error"]["message"]
        # Deleting twice: the second one finds nothing.
        await edge.send({"type": "conversation.item.delete", "item_id": user})
        assert edge.sent[-1]["type"] == "conversation.item.deleted"
        await edge.send(delete(user))
        assert last_error(edge)["code"] == "item_delete_invalid_item_id"
        # Nothing above changed the answer; the session still serves.
        assert edge.state.history == [Message("assistant", THREE_CLAUSES)]
        await ask(edge, "still there?", 2)
        assert edge.state.history[-1] == Message("assistant", "Still here.")


# -- output_audio_buffer.clear -----------------------------------------------------------------------


async def test_output_audio_buffer_clear_stops_the_audio_being_played() -> None:
    hold, script = held_reply()
    async with SessionHarness(memory_services(ScriptedRouter(script, spoken_reply("Ok.")))) as edge:
        await edge.send({"type": "output_audio_buffer.clear", "event_id": "evt_c"})
        assert last_error(edge)["event_id"] == "evt_c"  # no response: no audio to clear
        await edge.say("go on")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta")
        await edge.send({"type": "output_audio_buffer.clear"})
        cleared = edge.sent[-1]
        response = edge.of_type("response.done")[0]["response"]
        assert (cleared["type"], cleared["response_id"]) == ("output_audio_buffer.cleared", response["id"])
        assert response["status"] == "cancelled"
        assert edge.state.history[-1] == Message("assistant", "First.")
        hold.release()
        await edge.send({"type": "output_audio_buffer.clear"})  # nothing playing: cleared all the same
        cleared = edge.sent[-1]
        assert (cleared["type"], cleared["response_id"]) == ("output_audio_buffer.cleared", response["id"])
        await ask(edge, "more", 2)
