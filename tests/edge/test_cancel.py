"""Stopping a response: ``response.cancel`` and barge-in (server VAD hears the user while the answer
plays). The response ends ``cancelled``, the region's stream is closed, and history keeps only the
clauses whose audio was fully sent: what the user heard.

Fast tier: a scripted router, energy VAD and tone voice stand in for the models (``edge.testing``);
the playback pacing, cancel and history logic under test are the real ones.
"""

from __future__ import annotations

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
from router.api import Routed, RoutedEvent
from wire.turn import Message, TextDelta


def _interruptible() -> list[RoutedEvent | Hold]:
    """A first clause the user hears whole, then a long one still playing when they interrupt."""
    return [
        Routed(region="eu-west"),
        TextDelta(turn_id="t", delta="One. "),
        clause("One."),
        TextDelta(turn_id="t", delta="Two goes on and on. "),
        clause("Two goes on and on.", index=1, seconds=3.0),  # paced: far from sent when cancelled
        Hold(),  # the region is still working on the rest
    ]


async def test_response_cancel_keeps_only_heard_clauses() -> None:
    router = ScriptedRouter(_interruptible(), spoken_reply("Fine."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)  # "One." whole, "Two" begun
        await edge.send({"type": "response.cancel"})
        await edge.wait_for("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status"] == "cancelled"
        assert done["status_details"] == {"type": "cancelled", "reason": "client_cancelled"}
        assert done["output"][0]["status"] == "incomplete"
        assert done["output"][0]["content"][0]["transcript"] == "One."
        assert edge.of_type("response.output_audio_transcript.done")[0]["transcript"] == "One."
        types = [e["type"] for e in edge.sent]
        assert "response.output_audio.delta" not in types[types.index("response.output_audio.done") :]
        assert router.turns[0].closed_early  # the router's stream was closed: the region's turn cancels
        assert edge.state.history == [Message("user", "Tell me a story"), Message("assistant", "One.")]
        # Nothing left to cancel; the session carries on.
        await edge.send({"type": "response.cancel", "event_id": "evt_2"})
        error = edge.sent[-1]["error"]
        assert (error["code"], error["event_id"]) == ("response_cancel_not_active", "evt_2")
        await edge.say("Again")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done", 2)
        assert edge.of_type("response.done")[1]["response"]["status"] == "completed"
        assert router.turns[1].start.history[-1] == Message("assistant", "One.")


async def test_barge_in_cancels_and_the_new_turn_follows() -> None:
    router = ScriptedRouter(_interruptible(), spoken_reply("Sure."))
    async with SessionHarness(memory_services(router)) as edge:
        # Speech over the answer is a barge-in at once (no waiting to tell a backchannel:
        # tests/edge/test_backchannel.py).
        await edge.turn_detection(type="server_vad", voicemesh_backchannel=False)
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        await edge.append_audio(tone(0.3))  # the user talks over the answer
        await edge.wait_for("response.done")
        started = edge.of_type("input_audio_buffer.speech_started")
        assert len(started) == 1
        types = [e["type"] for e in edge.sent]
        assert types.index("input_audio_buffer.speech_started") < types.index("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert done["output"][0]["content"][0]["transcript"] == "One."
        assert router.turns[0].closed_early
        # The user stops: their turn is committed and answered, with what they heard as history.
        await edge.append_audio(silence(0.8))
        await edge.wait_for("response.done", 2)
        assert edge.of_type("input_audio_buffer.committed")[0]["item_id"] == started[0]["item_id"]
        second = router.turns[1]
        assert second.audio and second.start.text is None
        assert second.start.history == [Message("user", "Tell me a story"), Message("assistant", "One.")]
        assert edge.of_type("response.done")[1]["response"]["status"] == "completed"


async def test_speech_does_not_interrupt_when_the_session_says_so() -> None:
    hold = Hold()
    router = ScriptedRouter([Routed(region="a"), TextDelta(turn_id="t", delta="Ok. "), clause("Ok."), hold])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(
            {
                "type": "session.update",
                "session": {
                    "type": "realtime",
                    "audio": {
                        "input": {
                            "turn_detection": {
                                "type": "server_vad",
                                "interrupt_response": False,
                                "create_response": False,
                            }
                        }
                    },
                },
            }
        )
        await edge.say("Hi")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta")
        await edge.append_audio(tone(0.3) + silence(0.8))
        assert edge.of_type("input_audio_buffer.speech_stopped")
        assert not edge.of_type("response.done")  # still answering: speech did not cancel it
        hold.release()
        await edge.wait_for("response.done")
        assert edge.of_type("response.done")[0]["response"]["status"] == "completed"
        assert len(router.turns) == 1  # create_response off: the committed audio waits for the client
