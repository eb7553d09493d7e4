"""Text-only responses (``output_modalities: ["text"]``, on the session or on ``response.create``):
``response.output_text.delta/done``, a ``text`` content part, an ``output_text`` item, and no audio.

A ``ScriptedRouter`` stands in for the router and its regions (the edge's handling of a text-only
answer is under test, not a model): it records the ``TurnStart`` the edge sends, which must ask the
region for no audio. ``ToneVoice`` stands in for Piper and records whether it was asked to speak.
The real region, end to end, is in ``test_text_only_live.py``.
"""

from __future__ import annotations

from typing import Any

from edge.shared.events import SERVER_EVENT_MODELS
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, SessionHarness, ToneVoice, memory_services, spoken_reply, text_reply
from router.api import Degraded, FailedOver, Routed

AUDIO_EVENTS = (
    "response.output_audio.delta",
    "response.output_audio.done",
    "response.output_audio_transcript.delta",
    "response.output_audio_transcript.done",
)


def _text_session(**session: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", **session}}


def _deltas(edge: SessionHarness) -> str:
    return "".join(e["delta"] for e in edge.of_type("response.output_text.delta"))


async def test_a_text_only_session_gets_text_events_and_no_audio() -> None:
    router = ScriptedRouter(text_reply("Hel", "lo there", ". How are you?", region="eu-west"))
    voice = ToneVoice()
    async with SessionHarness(memory_services(router, fallback=voice)) as edge:
        await edge.send(_text_session(output_modalities=["text"]))
        assert edge.of_type("session.updated")[0]["session"]["output_modalities"] == ["text"]
        await edge.say("Hello?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")

    assert router.turns[0].start.output_audio is False  # the region synthesises nothing
    types = [e["type"] for e in edge.sent]
    assert not set(AUDIO_EVENTS) & set(types), types
    assert [t for t in types if t.startswith("response.") and t != "response.output_text.delta"] == [
        "response.created",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.done",
    ]
    assert _deltas(edge) == "Hello there. How are you?"  # deltas as the model split them, unspaced
    assert edge.of_type("response.content_part.added")[0]["part"] == {"type": "text", "text": ""}
    assert edge.of_type("response.output_text.done")[0]["text"] == "Hello there. How are you?"
    assert edge.of_type("response.content_part.done")[0]["part"] == {
        "type": "text",
        "text": "Hello there. How are you?",
    }
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed" and done["output_modalities"] == ["text"]
    assert done["output"][0]["content"] == [{"type": "output_text", "text": "Hello there. How are you?"}]
    assert done["usage"]["output_tokens"] > 0
    item_id = done["output"][0]["id"]
    for event in edge.sent:  # exactly the GA shapes (the SDK's models)
        model = SERVER_EVENT_MODELS.get(event["type"])
        assert model is not None or event["type"].startswith("voicemesh."), event["type"]
        if event["type"] == "response.output_text.delta":
            assert (event["item_id"], event["output_index"], event["content_index"]) == (item_id, 0, 0)
    assert voice.spoken == []


async def test_response_create_asks_for_text_once_and_the_session_stays_spoken() -> None:
    router = ScriptedRouter(text_reply("Just text."), spoken_reply("Spoken again."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Hello?")
        await edge.send({"type": "response.create", "response": {"output_modalities": ["text"]}})
        await edge.wait_for("response.done")
        await edge.say("And now?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done", 2)

    assert [t.start.output_audio for t in router.turns] == [False, True]
    first, second = (e["response"] for e in edge.of_type("response.done"))
    assert first["output_modalities"] == ["text"] and second["output_modalities"] == ["audio"]
    assert _deltas(edge) == "Just text."
    assert edge.of_type("response.output_audio.delta")  # the second one is spoken


async def test_a_text_answer_is_history_and_cannot_be_truncated() -> None:
    router = ScriptedRouter(text_reply("Paris."), text_reply("Yes."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_text_session(output_modalities=["text"]))
        await edge.say("Capital of France?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
        item_id = edge.of_type("response.done")[0]["response"]["output"][0]["id"]
        await edge.send({"type": "conversation.item.retrieve", "item_id": item_id})
        await edge.send(
            {"type": "conversation.item.truncate", "item_id": item_id, "content_index": 0, "audio_end_ms": 0}
        )
        await edge.say("Sure?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done", 2)

    retrieved = edge.of_type("conversation.item.retrieved")[0]["item"]
    assert retrieved["content"] == [{"type": "output_text", "text": "Paris."}]
    (error,) = edge.of_type("error")
    assert error["error"]["param"] == "item_id"
    history = [(m.role, m.content) for m in router.turns[1].start.history]
    assert history == [("user", "Capital of France?"), ("assistant", "Paris.")]


async def test_with_no_region_left_the_hold_message_comes_as_text_and_piper_stays_silent() -> None:
    router = ScriptedRouter([Degraded(reason="no_region_available")])
    voice = ToneVoice()
    settings = EdgeSettings(hold_message="Please hold on.")
    async with SessionHarness(memory_services(router, fallback=voice, settings=settings)) as edge:
        await edge.send(_text_session(output_modalities=["text"]))
        await edge.say("Hello?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")

    assert voice.spoken == [] and voice.loads == 0
    assert _deltas(edge) == "Please hold on."
    assert not edge.of_type("response.output_audio.delta")
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed"
    assert done["metadata"]["voicemesh_degraded"] == "true"
    assert done["output"][0]["content"] == [{"type": "output_text", "text": "Please hold on."}]


async def test_text_shown_before_a_failover_is_kept_and_the_next_region_goes_on() -> None:
    """The router tells the next region what was shown (``heard_text``); here the edge's side: the
    text already sent stays, and the new region's text follows it."""
    script = [
        *text_reply("Paris is ", "big", region="a")[:-1],
        FailedOver(from_region="a", to_region="b", reason="region_disconnected", heard_text="Paris is big"),
        Routed(region="b", attempt=2),
        *text_reply(" and old.", region="b")[1:],
    ]
    async with SessionHarness(memory_services(ScriptedRouter(script))) as edge:
        await edge.send(_text_session(output_modalities=["text"]))
        await edge.say("Tell me about Paris.")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    assert _deltas(edge) == "Paris is big and old."
    assert edge.of_type("response.output_text.done")[0]["text"] == "Paris is big and old."


async def test_modalities_are_checked() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send(_text_session(output_modalities=[]))
        await edge.send(_text_session(output_modalities=["text", "audio"]))  # both: audio carries text
        await edge.say("Hi")
        await edge.send({"type": "response.create", "response": {"output_modalities": []}})
    errors = [e["error"]["param"] for e in edge.of_type("error")]
    assert errors == ["session.output_modalities", "response.output_modalities"]
    assert edge.of_type("session.updated")[0]["session"]["output_modalities"] == ["audio"]
    assert not edge.of_type("response.created")
