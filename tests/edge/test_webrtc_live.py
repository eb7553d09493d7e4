"""The Realtime API over WebRTC on the real stack: a real aiortc caller (``voicemesh/webrtc_client.py``)
speaks espeak-ng speech on an Opus track to a real edge (Silero VAD) in front of real regions
(Whisper -> vLLM -> Kokoro) and hears the answer on its track, with the transcript on the
``oai-events`` data channel; speaking over the answer cancels it and clears the track; and a SIGKILL
of the serving region mid-answer does not end the answer: another region goes on with it.

The same behaviours with stand-ins, each pinned precisely, are in ``tests/edge/test_webrtc.py``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from tests.edge.conftest import rms
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory
from voicemesh.webrtc_client import WebRtcCaller
from wire.audio import CLIENT_RATE, FloatAudio, float_to_pcm16

TURN_S = 240.0
"""Only stops a broken run from hanging (a busy 2-core machine, models on CPU)."""
LONG_ASK = "Please tell me a long story about a brave dragon who lives in the mountains."


def _speech(say: Callable[[str], FloatAudio], text: str) -> bytes:
    """``text`` spoken at the client rate, then a second of silence (server VAD ends the turn)."""
    return float_to_pcm16(say(text)) + bytes(2 * CLIENT_RATE)


def _heard_since(caller: WebRtcCaller, mark: int) -> float:
    return rms(bytes(caller.heard[mark:]))


async def test_a_spoken_question_is_answered_on_the_track_and_barge_in_clears_it(
    edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    async with WebRtcCaller.connect(edge.http_url, edge.api_key) as caller:
        await caller.wait_for("session.created")
        caller.speak(_speech(say, "What is the capital of France?"))
        done = await caller.wait_for("response.done", within_s=TURN_S)
        assert done["response"]["status"] == "completed", done["response"].get("status_details")
        await caller.wait_for("output_audio_buffer.stopped", within_s=30)
        transcript = caller.of_type("response.output_audio_transcript.done")
        assert transcript and transcript[0]["transcript"].strip(), "no transcript on the data channel"
        assert not caller.of_type("response.output_audio.delta")  # the audio is the track's
        assert rms(bytes(caller.heard)) > 0.01, "the answer was not heard on the track"
        print(f"answered: {transcript[0]['transcript']!r}; heard rms {rms(bytes(caller.heard)):.3f}")

        # Barge-in: a long answer, spoken over once it plays.
        caller.speak(_speech(say, LONG_ASK))
        await caller.wait_for("output_audio_buffer.started", count=2, within_s=TURN_S)
        caller.speak(_speech(say, "Stop. What time is it?"))  # over the answer's first clause
        try:
            cleared = await caller.wait_for("output_audio_buffer.cleared", within_s=60)
        except TimeoutError:
            raise AssertionError(f"no barge-in: {[e['type'] for e in caller.events]}") from None
        cancelled = await caller.wait_for("response.done", count=2, within_s=60)
        assert cancelled["response"]["status"] == "cancelled", cancelled["response"]
        assert cleared["response_id"] == cancelled["response"]["id"]
        third = await caller.wait_for("response.done", count=3, within_s=TURN_S)  # the new question's
        assert third["response"]["status"] == "completed"


async def test_sigkill_of_the_serving_region_mid_answer_the_answer_goes_on(
    edge_factory: EdgeFactory, region_factory: RegionFactory, say: Callable[[str], FloatAudio]
) -> None:
    regions = {r.id: r for r in (region_factory("rtc-kill-a"), region_factory("rtc-kill-b"))}
    edge = await edge_factory(list(regions.values()))
    async with WebRtcCaller.connect(edge.http_url, edge.api_key) as caller:
        await caller.wait_for("session.created")
        caller.speak(_speech(say, LONG_ASK))
        routed = await caller.wait_for("voicemesh.turn.routed", within_s=TURN_S)
        serving: str = routed["region"]
        await caller.wait_for("output_audio_buffer.started", within_s=TURN_S)
        os.kill(regions[serving].pid, signal.SIGKILL)  # its first audio is out: mid-answer
        mark = len(caller.heard)
        done = await caller.wait_for("response.done", within_s=TURN_S)
        response: dict[str, Any] = done["response"]
        types = [e["type"] for e in caller.events]
        assert response["status"] == "completed", (response.get("status_details"), types)
        moved = caller.of_type("voicemesh.turn.failed_over")
        assert moved and moved[0]["from_region"] == serving, types
        survivor = next(r for r in regions if r != serving)
        assert (response.get("metadata") or {}).get("voicemesh_region") == survivor
        await caller.wait_for("output_audio_buffer.stopped", within_s=60)
        assert _heard_since(caller, mark) > 0.01, "nothing was heard after the kill"
        print(f"killed {serving}, went on on {survivor}; heard after: {_heard_since(caller, mark):.3f}")
