"""Input audio transcription as a feature of its own (``session.audio.input.transcription``): every
committed user audio turn gets ``conversation.item.input_audio_transcription.delta`` and
``.completed``, or ``.failed``, with or without a response.

A ``ScriptedRouter`` stands in for the router and its regions (what the edge asks for and how it
reports it are under test, not STT): it records each ``TurnStart`` (a transcription of its own is a
``transcribe_only`` turn) and answers with a scripted transcript. ``EnergyVad`` stands in for Silero
(``tone()`` is speech to it). Real Whisper through a real region is in ``test_transcription_live.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from edge.testing import (
    Hold,
    ScriptedRouter,
    SessionHarness,
    heard,
    memory_services,
    silence,
    spoken_reply,
    tone,
)
from router.api import Degraded, Routed
from wire.turn import Transcript

TRANSCRIPTION = "conversation.item.input_audio_transcription"


def _update(*, create_response: bool | None = True, transcription: Any = None) -> dict[str, Any]:
    audio_in: dict[str, Any] = {"transcription": transcription}
    if create_response is None:
        audio_in["turn_detection"] = None
    else:
        audio_in["turn_detection"] = {"type": "server_vad", "create_response": create_response}
    return {"type": "session.update", "session": {"type": "realtime", "audio": {"input": audio_in}}}


WHISPER = {"model": "whisper-1", "language": "en"}


async def _speak(edge: SessionHarness) -> str:
    """A spoken turn (a tone, then enough silence for the VAD to end it); its committed item id."""
    await edge.append_audio(tone(0.4) + silence(0.8))
    return str(edge.of_type("input_audio_buffer.committed")[-1]["item_id"])


async def test_the_model_name_is_accepted_as_given_and_echoed() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send(_update(transcription={"model": "gpt-4o-transcribe", "prompt": "names"}))
        await edge.send(_update(transcription={"model": "whisper-1"}))
        await edge.send(_update(transcription=None))
    first, second, off = (e["session"]["audio"]["input"] for e in edge.of_type("session.updated"))
    assert first["transcription"] == {"model": "gpt-4o-transcribe", "prompt": "names"}
    assert second["transcription"] == {"model": "whisper-1"}
    assert off["transcription"] is None
    assert not edge.of_type("error")


async def test_without_a_response_the_edge_asks_a_region_for_the_transcript_alone() -> None:
    router = ScriptedRouter(heard("book a table for two"))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(create_response=False, transcription={**WHISPER, "prompt": "Ms. Nguyen"}))
        item_id = await _speak(edge)
        await edge.wait_for(f"{TRANSCRIPTION}.completed")
        # The item now holds its words: retrieving it shows them.
        await edge.send({"type": "conversation.item.retrieve", "item_id": item_id})

    (turn,) = router.turns
    assert turn.start.transcribe_only and not turn.start.output_audio and turn.audio
    assert (turn.start.language, turn.start.prompt) == ("en", "Ms. Nguyen")  # Whisper's, as asked
    assert not edge.of_type("response.created")
    (delta,) = edge.of_type(f"{TRANSCRIPTION}.delta")
    (completed,) = edge.of_type(f"{TRANSCRIPTION}.completed")
    assert (delta["item_id"], delta["delta"]) == (item_id, "book a table for two")
    assert (completed["item_id"], completed["content_index"], completed["transcript"]) == (
        item_id,
        0,
        "book a table for two",
    )
    assert completed["usage"]["type"] == "duration" and completed["usage"]["seconds"] > 0
    assert edge.of_type("conversation.item.retrieved")[0]["item"]["content"] == [
        {"type": "input_audio", "transcript": "book a table for two"}
    ]


async def test_a_later_response_uses_the_transcript_and_skips_a_second_stt() -> None:
    router = ScriptedRouter(heard("what time is it"), spoken_reply("Noon."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(create_response=None, transcription=WHISPER))  # client commits
        await edge.append_audio(tone(0.4))
        await edge.send({"type": "input_audio_buffer.commit"})
        await edge.wait_for(f"{TRANSCRIPTION}.completed")
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")

    first, second = router.turns
    assert first.start.transcribe_only
    assert second.start.transcript == "what time is it" and second.audio is None
    assert second.start.history == [] and not second.start.transcribe_only
    assert len(edge.of_type(f"{TRANSCRIPTION}.completed")) == 1  # once per item


async def test_a_response_transcribes_its_own_audio_with_a_delta_first() -> None:
    router = ScriptedRouter(
        [Routed(region="a"), Transcript(turn_id="t", text="hello there"), *spoken_reply("Hi.")[1:]]
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(transcription=WHISPER))
        item_id = await _speak(edge)
        await edge.wait_for("response.done")

    (turn,) = router.turns  # no transcription turn of its own
    assert not turn.start.transcribe_only
    types = [e["type"] for e in edge.sent if e["type"].startswith(TRANSCRIPTION)]
    assert types == [f"{TRANSCRIPTION}.delta", f"{TRANSCRIPTION}.completed"]
    assert edge.of_type(f"{TRANSCRIPTION}.completed")[0]["item_id"] == item_id


async def test_without_transcription_on_a_response_still_reports_its_transcript_and_nothing_else() -> None:
    router = ScriptedRouter(
        [Routed(region="a"), Transcript(turn_id="t", text="hello there"), *spoken_reply("Hi.")[1:]]
    )
    async with SessionHarness(memory_services(router)) as edge:
        await _speak(edge)
        await edge.wait_for("response.done")
        await edge.send(_update(create_response=False))
        await _speak(edge)
    assert len(router.turns) == 1  # no transcription turn for audio nobody answers
    types = [e["type"] for e in edge.sent if e["type"].startswith(TRANSCRIPTION)]
    assert types == [f"{TRANSCRIPTION}.completed"]


async def test_audio_the_fallback_voice_answered_gets_a_failed_transcription() -> None:
    router = ScriptedRouter([Degraded(reason="no_region_available")])
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(transcription=WHISPER))
        item_id = await _speak(edge)
        await edge.wait_for(f"{TRANSCRIPTION}.failed")
        await edge.wait_for("response.done")

    assert len(router.turns) == 1  # no second try: no region was left
    (failed,) = edge.of_type(f"{TRANSCRIPTION}.failed")
    assert failed["item_id"] == item_id and failed["content_index"] == 0
    assert failed["error"]["code"] == "transcription_unavailable"
    assert "no_region_available" in failed["error"]["message"]
    assert not edge.of_type(f"{TRANSCRIPTION}.completed")
    assert edge.of_type("response.done")[0]["response"]["metadata"]["voicemesh_degraded"] == "true"


async def test_a_transcription_with_no_region_left_fails_and_the_session_carries_on() -> None:
    router = ScriptedRouter([Degraded(reason="no_region_available")], heard("second try"))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(create_response=False, transcription=WHISPER))
        first = await _speak(edge)
        await edge.wait_for(f"{TRANSCRIPTION}.failed")
        second = await _speak(edge)
        await edge.wait_for(f"{TRANSCRIPTION}.completed")
    assert [e["item_id"] for e in edge.of_type(f"{TRANSCRIPTION}.failed")] == [first]
    assert [e["item_id"] for e in edge.of_type(f"{TRANSCRIPTION}.completed")] == [second]
    assert not edge.of_type("error")


async def test_a_response_cancelled_before_its_transcript_hands_the_audio_to_transcription() -> None:
    hold = Hold()
    router = ScriptedRouter([Routed(region="a"), hold], heard("never mind"))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(transcription=WHISPER))
        item_id = await _speak(edge)
        await edge.wait_for("voicemesh.turn.routed")
        await edge.send({"type": "response.cancel"})
        await edge.wait_for(f"{TRANSCRIPTION}.completed")
    assert [t.start.transcribe_only for t in router.turns] == [False, True]
    assert edge.of_type(f"{TRANSCRIPTION}.completed")[0]["item_id"] == item_id
    assert edge.of_type("response.done")[0]["response"]["status"] == "cancelled"


async def test_a_commit_then_response_create_transcribes_once_in_the_response() -> None:
    """Pipecat's way (its own VAD): commit, then ``response.create`` at once. The response's region
    transcribes the audio; no turn of its own is spent on it."""
    router = ScriptedRouter(
        [Routed(region="a"), Transcript(turn_id="t", text="hello there"), *spoken_reply("Hi.")[1:]]
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(create_response=None, transcription=WHISPER))
        await edge.append_audio(tone(0.4))
        await edge.send({"type": "input_audio_buffer.commit"})
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    assert [t.start.transcribe_only for t in router.turns] == [False]
    assert len(edge.of_type(f"{TRANSCRIPTION}.completed")) == 1


async def test_a_running_transcription_is_cancelled_when_a_response_takes_its_audio() -> None:
    hold = Hold()
    router = ScriptedRouter(
        [Routed(region="a"), hold, *heard("late")[1:]],
        [Routed(region="a"), Transcript(turn_id="t", text="hello there"), *spoken_reply("Hi.")[1:]],
    )
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(create_response=None, transcription=WHISPER))
        await edge.append_audio(tone(0.4))
        await edge.send({"type": "input_audio_buffer.commit"})
        async with asyncio.timeout(30):
            await hold.reached.wait()  # the transcription turn is running
        await edge.send({"type": "response.create"})
        await edge.wait_for("response.done")
    first, second = router.turns  # (the session has closed: every task of it has ended)
    assert first.start.transcribe_only and first.closed_early  # stopped: the region stops its STT
    assert not second.start.transcribe_only and second.audio
    completed = edge.of_type(f"{TRANSCRIPTION}.completed")
    assert [e["transcript"] for e in completed] == ["hello there"]
