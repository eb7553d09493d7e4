"""A response as the client sees it: the full Realtime event sequence, routing/queue/failover vendor
events and ``response.metadata``, and the degraded path where the edge's own voice answers.

Fast tier: a scripted router stands in for the router and regions and a tone voice for Piper
(``edge.testing``), since what is under test is the edge's relay and framing, not the models.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

from edge.shared.events import SERVER_EVENT_MODELS
from edge.shared.settings import EdgeSettings
from edge.testing import ScriptedRouter, SessionHarness, ToneVoice, clause, memory_services, spoken_reply
from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from wire.errors import RegionUnavailable
from wire.turn import TextDelta, TurnDone, TurnQueued, TurnStart

DELTAS = {"response.output_audio.delta", "response.output_audio_transcript.delta"}


async def _text_turn(router: Any, voice: ToneVoice | None = None, hold: str | None = None) -> SessionHarness:
    settings = EdgeSettings() if hold is None else EdgeSettings(hold_message=hold)
    services = memory_services(router, fallback=voice, settings=settings)
    async with SessionHarness(services) as edge:
        await edge.say("Hello?")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    return edge


def _audio(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta"
    )


def _text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


async def test_full_event_sequence_of_a_response() -> None:
    script = spoken_reply("Hello there. How are you?", region="eu-west")
    edge = await _text_turn(ScriptedRouter(script))
    types = [e["type"] for e in edge.sent]
    assert [t for t in types if t not in DELTAS] == [
        "session.created",
        "conversation.item.added",
        "conversation.item.done",
        "response.created",
        "response.output_item.added",
        "conversation.item.added",
        "response.content_part.added",
        "voicemesh.turn.routed",
        "response.output_audio.done",
        "response.output_audio_transcript.done",
        "response.content_part.done",
        "response.output_item.done",
        "conversation.item.done",
        "response.done",
    ]
    first_delta = min(i for i, t in enumerate(types) if t in DELTAS)
    last_delta = max(i for i, t in enumerate(types) if t in DELTAS)
    assert types.index("response.content_part.added") < first_delta
    assert last_delta < types.index("response.output_audio.done")
    # Every event is one the SDK's models accept (vendor ones aside), and names this response.
    for event in edge.sent:
        model = SERVER_EVENT_MODELS.get(event["type"])
        assert model is not None or event["type"].startswith("voicemesh."), event["type"]
    response_id = edge.of_type("response.created")[0]["response"]["id"]
    item_id = edge.of_type("response.output_item.added")[0]["item"]["id"]
    for event in edge.sent[3:]:
        if "response_id" in event:
            assert event["response_id"] == response_id
        if event["type"] in DELTAS:
            assert (event["item_id"], event["output_index"], event["content_index"]) == (item_id, 0, 0)
    # What was said and played is what the region sent, 100 ms per audio delta.
    pcm = b"".join(e.pcm for e in script if hasattr(e, "pcm"))
    assert _audio(edge.sent) == pcm
    assert all(len(base64.b64decode(e["delta"])) <= 4800 for e in edge.of_type("response.output_audio.delta"))
    assert _text(edge.sent) == "Hello there. How are you? "
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed" and done["status_details"] == {"type": "completed"}
    assert done["output"][0]["content"] == [
        {"type": "output_audio", "transcript": "Hello there. How are you?"}
    ]
    assert done["output"][0]["status"] == "completed"
    assert done["metadata"].pop("voicemesh_stages")  # edge/responses/stages.py
    assert done["metadata"] == {"voicemesh_region": "eu-west"}
    routed = edge.of_type("voicemesh.turn.routed")[0]
    assert (routed["response_id"], routed["region"], routed["attempt"]) == (response_id, "eu-west", 1)


async def test_queue_and_failover_are_told_as_vendor_events_and_metadata() -> None:
    script: list[RoutedEvent] = [
        TurnQueued(turn_id="t", position=2, estimated_wait_s=1.5),
        Routed(region="eu-west"),
        TextDelta(turn_id="t", delta="One. "),
        clause("One."),
        FailedOver(from_region="eu-west", to_region="us-east", reason="stalled"),
        Routed(region="us-east", attempt=2),
        TextDelta(turn_id="t", delta="Two."),
        clause("Two.", index=1),
        TurnDone(turn_id="t", region="us-east", status="completed"),
    ]
    edge = await _text_turn(ScriptedRouter(script))
    vendor = [
        {k: v for k, v in e.items() if k not in ("event_id", "response_id")}
        for e in edge.sent
        if e["type"].startswith("voicemesh.")
    ]
    assert vendor == [
        {"type": "voicemesh.turn.queued", "position": 2, "estimated_wait_s": 1.5},
        {"type": "voicemesh.turn.routed", "region": "eu-west", "attempt": 1},
        {
            "type": "voicemesh.turn.failed_over",
            "from_region": "eu-west",
            "to_region": "us-east",
            "reason": "stalled",
        },
        {"type": "voicemesh.turn.routed", "region": "us-east", "attempt": 2},
    ]
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed"
    assert done["metadata"].pop("voicemesh_stages")
    assert done["metadata"] == {"voicemesh_region": "us-east", "voicemesh_failed_over_from": "eu-west"}
    assert done["output"][0]["content"][0]["transcript"] == "One. Two."


async def test_degraded_turn_speaks_the_unvoiced_text_with_the_fallback_voice() -> None:
    voice = ToneVoice()
    script: list[RoutedEvent] = [
        Routed(region="eu-west"),
        TextDelta(turn_id="t", delta="Part one. "),
        clause("Part one."),
        TextDelta(turn_id="t", delta="Part two. Part three. "),  # the region's text, its audio lost
        Degraded(reason="no_region", unvoiced_text=" Part two. Part three. ", tried=("eu-west",)),
    ]
    edge = await _text_turn(ScriptedRouter(script), voice)
    assert voice.spoken == ["Part two.", "Part three."]
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed"
    assert done["metadata"].pop("voicemesh_stages")
    assert done["metadata"] == {
        "voicemesh_degraded": "true", "served_by": "edge", "voicemesh_degraded_reason": "no_region",
    }  # fmt: skip
    # The client already read the unvoiced text; now it hears it too, after the region's audio.
    text = "Part one. Part two. Part three."
    assert _text(edge.sent).strip() == text
    assert done["output"][0]["content"][0]["transcript"] == text
    assert len(edge.of_type("response.output_audio.delta")) == 3
    assert edge.state.history[-1].content == text


async def test_no_region_at_all_speaks_the_hold_message() -> None:
    voice = ToneVoice()
    edge = await _text_turn(
        ScriptedRouter([Degraded(reason="all_regions_down")]), voice, hold="Sorry. Try later."
    )
    assert _text(edge.sent) == "Sorry. Try later."
    assert voice.spoken == ["Sorry.", "Try later."]
    done = edge.of_type("response.done")[0]["response"]
    assert done["metadata"]["voicemesh_degraded_reason"] == "all_regions_down"
    assert done["metadata"]["served_by"] == "edge" and "voicemesh_region" not in done["metadata"]
    assert done["output"][0]["content"][0]["transcript"] == "Sorry. Try later."


async def test_region_errors_and_failed_turns_degrade_too() -> None:
    cases: list[tuple[list[RoutedEvent], str]] = [
        ([Routed(region="a"), Degraded(reason="llm_failed")], "llm_failed"),
        (
            [Routed(region="a"), TurnDone(turn_id="t", region="a", status="failed", error="tts_failed")],
            "tts_failed",
        ),
        ([TurnDone(turn_id="t", region="a", status="failed")], "region_failed"),
    ]
    for script, reason in cases:
        edge = await _text_turn(ScriptedRouter(script))
        done = edge.of_type("response.done")[0]["response"]
        assert done["metadata"]["voicemesh_degraded_reason"] == reason
        assert edge.of_type("response.output_audio.delta")


class RaisingRouter(ScriptedRouter):
    """A router that raises instead of yielding ``Degraded`` (stands in for a router bug)."""

    def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncIterator[RoutedEvent]:
        super().run_turn(session, start, audio)
        return self._raise()

    async def _raise(self) -> AsyncIterator[RoutedEvent]:
        yield Routed(region="a")
        raise RegionUnavailable("every region refused")


async def test_a_router_that_raises_still_gets_an_answer() -> None:
    edge = await _text_turn(RaisingRouter([]))
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed"
    assert done["metadata"]["served_by"] == "edge"
    assert done["metadata"]["voicemesh_degraded_reason"] == RegionUnavailable.code
