"""The answer started at a pause in the speech (``edge/realtime/speculation.py``): the region works through
the rest of the silence window, the client sees only the turn that was called, and a turn started
for speech that went on is cancelled unseen.

Real sessions and frames through ``SessionHarness``; the router is scripted (its regions are not
what is under test) and the VAD is ``EnergyVad`` (a tone is speech), so pauses fall where the audio
puts them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from prometheus_client import REGISTRY

from edge.audio.turn_detector import SpeechPaused, SpeechResumed, SpeechStarted, SpeechStopped, TurnDetector
from edge.audio.vad import CHUNK_MS
from edge.shared.settings import EdgeSettings, VadSettings
from edge.shared.state import TurnDetection
from edge.testing import Hold, ScriptedRouter, SessionHarness, memory_services, silence, spoken_reply, tone
from tests.fixtures.common import in_own_loop


def _speculated(outcome: str) -> float:
    return REGISTRY.get_sample_value("voicemesh_edge_speculative_turns_total", {"outcome": outcome}) or 0.0


def _transcript(h: SessionHarness) -> str:
    return "".join(e["delta"] for e in h.of_type("response.output_audio_transcript.delta"))


def test_detector_reports_a_pause_then_a_resume_or_the_stop_at_the_same_point() -> None:
    cfg = TurnDetection(threshold=0.5, prefix_padding_ms=0, silence_duration_ms=5 * CHUNK_MS)
    det = TurnDetector(cfg, pause_ms=2 * CHUNK_MS)
    probs = [0.9] * 3 + [0.1] * 2 + [0.9] + [0.1] * 5
    events = [e for i, p in enumerate(probs) if (e := det.feed(p, i * CHUNK_MS)) is not None]
    assert events == [
        SpeechStarted(0),
        SpeechPaused(3 * CHUNK_MS),
        SpeechResumed(),
        SpeechPaused(6 * CHUNK_MS),
        SpeechStopped(6 * CHUNK_MS),  # where the pause said it would be
    ]
    # A "pause" as long as the silence window is the stop itself: never reported as a pause.
    det = TurnDetector(cfg, pause_ms=5 * CHUNK_MS)
    events = [e for i, p in enumerate([0.9] + [0.1] * 5) if (e := det.feed(p, i * CHUNK_MS)) is not None]
    assert events == [SpeechStarted(0), SpeechStopped(CHUNK_MS)]


async def test_the_turn_started_at_the_pause_is_the_one_answered() -> None:
    hold = Hold()
    router = ScriptedRouter(
        [*spoken_reply("Paris is the capital.")[:1], hold, *spoken_reply("Paris is the capital.")[1:]]
    )
    adopted = _speculated("adopted")
    async with SessionHarness(memory_services(router)) as h:
        await h.append_audio(tone(1.0) + silence(0.25))
        # The region has the turn while the silence window runs; the client has seen nothing of it.
        assert len(router.turns) == 1
        assert not h.of_type("input_audio_buffer.speech_stopped") and not h.of_type("response.created")
        await asyncio.wait_for(hold.reached.wait(), 10)
        await h.append_audio(silence(0.4))
        await h.wait_for("response.created")  # shown once the turn is called, while the region still works
        hold.release()
        await h.wait_for("response.done")
    assert len(router.turns) == 1, "the called turn was served by the turn already started"
    assert not router.turns[0].closed_early
    assert _transcript(h).strip() == "Paris is the capital."
    done = h.of_type("response.done")[0]["response"]
    assert done["status"] == "completed"
    assert int(done["metadata"]["voicemesh_started_early_ms"]) >= 0
    assert _speculated("adopted") == adopted + 1
    order = [e["type"] for e in h.sent]
    assert order.index("input_audio_buffer.speech_stopped") < order.index("input_audio_buffer.committed")
    assert order.index("input_audio_buffer.committed") < order.index("response.created")


async def test_speech_that_goes_on_cancels_the_early_turn_unseen() -> None:
    first_hold = Hold()
    router = ScriptedRouter(
        [*spoken_reply("Wrong answer.")[:1], first_hold, *spoken_reply("Wrong answer.")[1:]],
        spoken_reply("Right answer."),
    )
    dropped = _speculated("dropped")
    async with SessionHarness(memory_services(router)) as h:
        await h.append_audio(tone(0.6) + silence(0.25))
        assert len(router.turns) == 1
        await asyncio.wait_for(first_hold.reached.wait(), 10)
        await h.append_audio(tone(0.6) + silence(0.7))  # the user goes on, then stops
        await h.wait_for("response.done")
    assert len(router.turns) == 2
    early, called = router.turns
    assert early.closed_early, "the early turn was closed (its region cancels it)"
    assert called.audio is not None and early.audio is not None
    assert len(called.audio) > len(early.audio)  # the called turn has all the speech
    assert called.audio.startswith(early.audio[: len(early.audio) // 2])
    assert _transcript(h).strip() == "Right answer."
    assert "Wrong" not in str(h.sent)
    assert len(h.of_type("response.created")) == 1
    assert _speculated("dropped") == dropped + 1


async def test_a_turn_changed_during_the_pause_is_started_again() -> None:
    hold = Hold()
    router = ScriptedRouter([hold, *spoken_reply("Old.")], spoken_reply("New."))
    async with SessionHarness(memory_services(router)) as h:
        await h.append_audio(tone(0.6) + silence(0.25))
        await asyncio.wait_for(hold.reached.wait(), 10)
        await h.send({"type": "session.update", "session": {"type": "realtime", "instructions": "Be brief."}})
        await h.append_audio(silence(0.4))
        await h.wait_for("response.done")
    early, called = router.turns
    assert early.closed_early
    assert called.start.instructions == "Be brief." and early.start.instructions != "Be brief."
    assert early.audio == called.audio
    assert _transcript(h).strip() == "New."


async def test_off_no_turn_before_the_end_of_speech() -> None:
    settings = EdgeSettings(api_keys=("test-key",), vad=VadSettings(speculate_after_ms=0))
    router = ScriptedRouter(spoken_reply("Hello."))
    async with SessionHarness(memory_services(router, settings=settings)) as h:
        await h.append_audio(tone(0.6) + silence(0.45))
        assert router.turns == []
        await h.append_audio(silence(0.2))
        await h.wait_for("response.done")
    assert len(router.turns) == 1


@pytest.mark.parametrize("called", [False, True], ids=["mid-pause", "right-after-the-end"])
async def test_closing_the_session_leaves_nothing_running(called: bool) -> None:
    # Mid-pause: the early turn is dropped. Right after the end of the turn: the response that took
    # the early turn over is cancelled at once, maybe before it read a single event. Either way the
    # early turn's reader and the router's stream end.
    hold = Hold()
    router = ScriptedRouter([hold, *spoken_reply("Never heard.")])
    harnesses: list[SessionHarness] = []

    async def open_and_close() -> set[asyncio.Task[Any]]:
        before = asyncio.all_tasks()
        h = SessionHarness(memory_services(router))
        harnesses.append(h)
        await h.__aenter__()
        await h.append_audio(tone(0.6) + silence(0.25))
        await asyncio.wait_for(hold.reached.wait(), 10)
        if called:
            await h.append_audio(silence(0.4))  # the end of the turn: the response takes the early turn
            assert h.of_type("input_audio_buffer.committed")
        await h.__aexit__()
        return asyncio.all_tasks() - before

    assert await in_own_loop(open_and_close) == set()
    assert len(router.turns) == 1 and router.turns[0].closed_early
    [h] = harnesses
    if not called:
        assert not h.of_type("response.created")


async def test_no_early_turn_without_create_response() -> None:
    router = ScriptedRouter(spoken_reply("Hello."))
    services = memory_services(router)
    async with SessionHarness(services) as h:
        await h.turn_detection(type="server_vad", create_response=False)
        await h.append_audio(tone(0.6) + silence(0.8))
        await h.wait_for("input_audio_buffer.committed")
    assert router.turns == []
