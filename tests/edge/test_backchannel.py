"""Speech over an answer is held while the answer's audio pauses: a short backchannel ("mm-hm")
resumes the answer and leaves no trace, other words or long speech are a barge-in as before
(``edge/realtime/backchannel.py``).

Fast tier: a scripted router stands in for the regions (the answer, and the transcribe-only turn
that hears the short speech), energy VAD and a tone for the speech; the pause, the hold, the
decision and the events the client gets are the real code's. The bound is counted in audio (the
VAD's position), so nothing here depends on the machine's speed.
"""

from __future__ import annotations

import asyncio
import base64

from edge.shared.settings import BackchannelSettings, EdgeSettings, VadSettings
from edge.testing import (
    Hold,
    ScriptedRouter,
    SessionHarness,
    clause,
    heard,
    memory_services,
    silence,
    tone,
)
from router.api import Routed, RoutedEvent
from wire.turn import Message, TextDelta, TurnDone

LONG_S = 3.0
"""The answer's second clause: still playing when the user speaks (audio is paced in real time)."""


def _answer(rest: Hold) -> list[RoutedEvent | Hold]:
    """A first clause played whole, a long one playing when the user speaks; the region holds the
    end (``rest``) so the answer cannot finish before the test decides."""
    return [
        Routed(region="eu-west"),
        TextDelta(turn_id="t", delta="One. "),
        clause("One."),
        TextDelta(turn_id="t", delta="Two goes on and on. "),
        clause("Two goes on and on.", index=1, seconds=LONG_S),
        rest,
        TextDelta(turn_id="t", delta="Three."),
        clause("Three.", index=2),
        TurnDone(turn_id="t", region="eu-west", status="completed", text="One. Two goes on and on. Three."),
    ]


def _audio_s(edge: SessionHarness) -> float:
    deltas = edge.of_type("response.output_audio.delta")
    return sum(len(base64.b64decode(e["delta"])) for e in deltas) / 48_000


async def test_a_backchannel_pauses_the_answer_and_it_resumes() -> None:
    rest, listening = Hold(), Hold()
    router = ScriptedRouter(_answer(rest), [Routed(region="eu-west"), listening, *heard("Mm-hmm, yeah.")[1:]])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)  # "One." whole, "Two" begun
        response = edge.session.responses.response
        assert response is not None
        await edge.append_audio(tone(0.4))  # "mm-hm" over the answer
        assert response.player.paused  # the answer's audio stopped at once
        # (a client's events wait for the speech events before them: the silence's, on a task)
        ending = asyncio.create_task(edge.append_audio(silence(0.8)))
        await listening.reached.wait()  # the short speech is being transcribed: still paused
        assert response.player.paused and not response.cancelling
        listening.release()
        await ending
        rest.release()
        await edge.wait_for("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status"] == "completed"
        assert done["output"][0]["content"][0]["transcript"] == "One. Two goes on and on. Three."
        # The whole answer was sent, nothing skipped at the pause: 0.1 + 3.0 + 0.1 s of audio.
        assert abs(_audio_s(edge) - (0.2 + LONG_S)) < 0.01
        # The backchannel left no trace: no speech events, no item, no second response.
        types = {e["type"] for e in edge.sent}
        assert not types & {
            "input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed",
        }  # fmt: skip
        assert [t.start.transcribe_only for t in router.turns] == [False, True]
        assert edge.state.history == [
            Message("user", "Tell me a story"),
            Message("assistant", "One. Two goes on and on. Three."),
        ]


async def test_other_words_are_a_barge_in_and_their_turn_is_answered() -> None:
    rest = Hold()
    router = ScriptedRouter(
        _answer(rest),
        heard("Wait, tell me about Rome instead."),
        [Routed(region="eu-west"), *_answer(Hold())[1:3]],
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        await edge.append_audio(tone(0.5) + silence(0.8))
        await edge.wait_for("response.done")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert done["output"][0]["content"][0]["transcript"] == "One."  # truncated at what was heard
        types = [e["type"] for e in edge.sent]
        order = [
            "input_audio_buffer.speech_started", "response.done", "input_audio_buffer.speech_stopped",
            "input_audio_buffer.committed",
        ]  # fmt: skip
        assert [types.index(t) for t in order] == sorted(types.index(t) for t in order)
        # The new turn is answered, its words already known: no second STT on the region.
        await edge.wait_for("response.created", 2)
        listened, answer = router.turns[1:3]
        # Whisper was told to expect backchannels (a hummed "mm-hm" is not heard as "with him").
        assert listened.start.transcribe_only and listened.start.prompt == BackchannelSettings().prompt
        assert answer.start.transcript == "Wait, tell me about Rome instead." and answer.audio is None
        assert answer.start.history[-1] == Message("assistant", "One.")
        completed = edge.of_type("conversation.item.input_audio_transcription.completed")
        assert completed[0]["item_id"] == edge.of_type("input_audio_buffer.committed")[0]["item_id"]
        rest.release()


async def test_speech_past_the_bound_interrupts_without_waiting_for_its_end() -> None:
    router = ScriptedRouter(_answer(Hold()), [Routed(region="eu-west"), *_answer(Hold())[1:3]])
    vad = VadSettings(backchannel=BackchannelSettings(max_ms=600))
    async with SessionHarness(memory_services(router, settings=EdgeSettings(vad=vad))) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        await edge.append_audio(tone(1.2))  # still talking: no end of speech yet
        await edge.wait_for("response.done")
        assert not edge.of_type("input_audio_buffer.speech_stopped")
        done = edge.of_type("response.done")[0]["response"]
        assert done["status_details"] == {"type": "cancelled", "reason": "turn_detected"}
        assert len(edge.of_type("input_audio_buffer.speech_started")) == 1
        await edge.append_audio(silence(0.8))
        await edge.wait_for("response.created", 2)
        assert [t.start.transcribe_only for t in router.turns] == [False, False]  # no STT to decide
        assert router.turns[1].audio  # the new turn's region hears it itself


async def test_the_silence_after_a_short_backchannel_does_not_count_toward_the_bound() -> None:
    """0.5 s of speech, then the VAD's 500 ms silence window: past a 600 ms bound in audio (900 ms
    here: speech at the buffer's start is taken to begin at the prefix padding, 300 ms), but the
    speech itself was short. It is a backchannel (decided by its words), not an interruption."""
    rest = Hold()
    router = ScriptedRouter(_answer(rest), heard("Mm-hm."))
    vad = VadSettings(backchannel=BackchannelSettings(max_ms=600))
    async with SessionHarness(memory_services(router, settings=EdgeSettings(vad=vad))) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        await edge.append_audio(tone(0.5) + silence(0.8))
        rest.release()
        await edge.wait_for("response.done")
        assert edge.of_type("response.done")[0]["response"]["status"] == "completed"
        assert not edge.of_type("input_audio_buffer.speech_started")
        assert [t.start.transcribe_only for t in router.turns] == [False, True]


async def test_no_transcript_is_a_barge_in() -> None:
    failed: list[RoutedEvent] = [
        Routed(region="eu-west"),
        TurnDone(turn_id="t", region="eu-west", status="failed"),
    ]
    router = ScriptedRouter(_answer(Hold()), failed, [Routed(region="eu-west"), *_answer(Hold())[1:3]])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        await edge.append_audio(tone(0.4) + silence(0.8))
        await edge.wait_for("response.created", 2)
        assert edge.of_type("response.done")[0]["response"]["status"] == "cancelled"
        assert router.turns[2].audio  # unheard: the new turn's region transcribes it


async def test_the_session_turns_it_off_and_bad_values_are_refused() -> None:
    async with SessionHarness(memory_services()) as edge:
        assert edge.of_type("session.created")[0]["session"]["audio"]["input"]["turn_detection"][
            "voicemesh_backchannel"
        ]
        await edge.turn_detection(type="server_vad", voicemesh_backchannel=False)
        updated = edge.of_type("session.updated")[-1]["session"]["audio"]["input"]["turn_detection"]
        assert updated["voicemesh_backchannel"] is False
        assert edge.state.turn_detection is not None and not edge.state.turn_detection.voicemesh_backchannel
        await edge.turn_detection(type="server_vad", voicemesh_backchannel="yes")
        error = edge.of_type("error")[-1]["error"]
        assert error["param"] == "session.audio.input.turn_detection.voicemesh_backchannel"
        assert edge.state.turn_detection is not None and not edge.state.turn_detection.voicemesh_backchannel


async def test_turn_detection_turned_off_while_held_lets_the_answer_go_on() -> None:
    rest = Hold()
    async with SessionHarness(memory_services(ScriptedRouter(_answer(rest)))) as edge:
        await edge.say("Tell me a story")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.output_audio.delta", 2)
        response = edge.session.responses.response
        assert response is not None
        await edge.append_audio(tone(0.4))
        assert response.player.paused
        await edge.send(
            {
                "type": "session.update",
                "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
            }
        )
        assert not response.player.paused  # no end of that speech will come: the answer goes on
        rest.release()
        await edge.wait_for("response.done")
        assert edge.of_type("response.done")[0]["response"]["status"] == "completed"
