"""How a response ends, for each outcome the router hands the edge: a client error is an ``error``
event and a failed ``response.done`` (never a spoken apology); an exception anywhere in a response
still ends it with ``response.done``; after a failover the transcript and history hold exactly what
the user heard; a fully voiced answer is never followed by an apology.

Fast tier: a scripted router stands in for the router and regions and a tone voice for Piper
(``edge.testing``): what is under test is the edge's relay and framing, not the models.
"""

from __future__ import annotations

from typing import Any

from edge.shared.settings import EdgeSettings
from edge.testing import Raise, ScriptedRouter, ScriptStep, SessionHarness, ToneVoice, clause, memory_services
from router.api import ClientRefused, Degraded, FailedOver, Routed
from wire.errors import TextTooLong
from wire.turn import TextDelta, Transcript, TurnDone

HOLD = "Sorry, please try again."


async def _turns(router: ScriptedRouter, voice: ToneVoice, count: int = 1) -> SessionHarness:
    """``count`` text turns on one session, each waited to its ``response.done``."""
    services = memory_services(router, fallback=voice, settings=EdgeSettings(hold_message=HOLD))
    async with SessionHarness(services) as edge:
        for i in range(count):
            await edge.say(f"Question {i}?")
            await edge.send({"type": "response.create"})
            await edge.wait_for("response.done", i + 1)
    return edge


def _deltas(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")


def _assistant_history(edge: SessionHarness) -> list[str]:
    return [m.content for m in edge.state.history if m.role == "assistant"]


async def test_a_client_error_is_an_error_event_and_a_failed_response_never_an_apology() -> None:
    voice = ToneVoice()
    refused = ClientRefused(code="unknown_voice", message="voice 'nobody' is not available", param="voice")
    router = ScriptedRouter([Routed(region="eu"), refused], [Routed(region="eu"), *_answer("Fine.")])
    edge = await _turns(router, voice, count=2)

    (error,) = edge.of_type("error")
    assert error["error"]["type"] == "invalid_request_error"
    assert (error["error"]["code"], error["error"]["message"]) == (refused.code, refused.message)
    assert error["error"]["param"] == "voice"
    first, second = (e["response"] for e in edge.of_type("response.done"))
    assert first["status"] == "failed"
    assert first["status_details"]["error"] == {
        "type": "invalid_request_error", "code": "unknown_voice", "message": refused.message,
    }  # fmt: skip
    assert "voicemesh_degraded" not in (first["metadata"] or {})
    assert voice.spoken == [], "a client error was spoken as an apology"
    # The error comes before its response.done, and the session goes on serving.
    types = [e["type"] for e in edge.sent]
    assert types.index("error") < types.index("response.done")
    assert second["status"] == "completed" and _assistant_history(edge) == ["Fine."]


async def test_a_router_raising_a_client_error_is_refused_the_same_way() -> None:
    edge = await _turns(
        ScriptedRouter([Routed(region="eu"), Raise(TextTooLong("text is too long"))]), ToneVoice()
    )
    (error,) = edge.of_type("error")
    assert error["error"]["code"] == "text_too_long"
    (done,) = edge.of_type("response.done")
    assert done["response"]["status"] == "failed"


async def test_an_unexpected_exception_still_ends_the_response() -> None:
    """Before, the client waited forever for a ``response.done`` that never came."""
    voice = ToneVoice()
    crash: list[ScriptStep] = [
        Routed(region="eu"),
        TextDelta(turn_id="t", delta="Half "),
        Raise(RuntimeError("bug")),
    ]
    router = ScriptedRouter(crash, [Routed(region="eu"), *_answer("Recovered.")])
    edge = await _turns(router, voice, count=2)
    first, second = (e["response"] for e in edge.of_type("response.done"))
    assert first["status"] == "failed"
    assert first["status_details"]["error"]["type"] == "server_error"
    assert "bug" not in str(first["status_details"]), "internal details leaked to the client"
    assert first["output"][0]["content"][0]["transcript"] == ""
    assert second["status"] == "completed" and _assistant_history(edge) == ["Recovered."]


async def test_after_a_failover_the_transcript_is_what_was_heard_plus_the_continuation() -> None:
    script: list[ScriptStep] = [
        Routed(region="eu"),
        Transcript(turn_id="t", text="Question 0?"),
        TextDelta(turn_id="t", delta="Paris is big. "),
        clause("Paris is big."),
        TextDelta(turn_id="t", delta="It has a river called the"),  # never voiced: the region died
        FailedOver(
            from_region="eu", to_region="us", reason="region_disconnected", heard_text="Paris is big."
        ),
        Routed(region="us", attempt=2),
        TextDelta(turn_id="t", delta="It is old, too."),
        clause("It is old, too.", index=0),
        TurnDone(turn_id="t", region="us", status="completed"),
    ]
    edge = await _turns(ScriptedRouter(script), ToneVoice())
    heard = "Paris is big. It is old, too."
    assert _deltas(edge.sent) == heard
    assert "river" not in str(edge.sent), "the dead region's unheard text reached the client"
    (done,) = edge.of_type("response.done")
    assert done["response"]["status"] == "completed"
    assert done["response"]["output"][0]["content"][0]["transcript"] == heard
    assert edge.of_type("response.output_audio_transcript.done")[0]["transcript"] == heard
    assert _assistant_history(edge) == [heard]


async def test_a_fully_voiced_answer_is_not_followed_by_an_apology() -> None:
    """The region died after its last audio: nothing is left to say, so the response completes."""
    voice = ToneVoice()
    script: list[ScriptStep] = [
        Routed(region="eu"),
        TextDelta(turn_id="t", delta="It is sunny. "),
        clause("It is sunny."),
        Degraded(reason="region_disconnected", unvoiced_text="", tried=("eu",)),
    ]
    edge = await _turns(ScriptedRouter(script), voice)
    assert voice.spoken == []
    (done,) = edge.of_type("response.done")
    assert done["response"]["status"] == "completed"
    assert done["response"]["metadata"].pop("voicemesh_stages")  # edge/responses/stages.py
    assert done["response"]["metadata"] == {"voicemesh_region": "eu"}
    assert _deltas(edge.sent) == "It is sunny." and _assistant_history(edge) == ["It is sunny."]


async def test_unvoiced_text_after_a_failover_is_spoken_by_the_edge_once() -> None:
    voice = ToneVoice()
    script: list[ScriptStep] = [
        Routed(region="eu"),
        TextDelta(turn_id="t", delta="One. Lost words "),
        clause("One."),
        FailedOver(from_region="eu", to_region="us", reason="region_disconnected", heard_text="One."),
        Routed(region="us", attempt=2),
        TextDelta(turn_id="t", delta="Two. Three."),
        clause("Two."),
        Degraded(reason="no_region_available", unvoiced_text="Three.", tried=("eu", "us")),
    ]
    edge = await _turns(ScriptedRouter(script), voice)
    assert voice.spoken == ["Three."]
    assert _deltas(edge.sent) == "One. Two. Three." and _assistant_history(edge) == ["One. Two. Three."]
    assert "Lost" not in str(edge.sent)


def _answer(text: str) -> list[ScriptStep]:
    return [
        TextDelta(turn_id="t", delta=text),
        clause(text),
        TurnDone(turn_id="t", region="eu", status="completed"),
    ]
