"""Backchannels over a real answer (Whisper -> vLLM -> Kokoro behind a real router): an espeak
"Yeah." while the answer plays does not stop it, "Wait, tell me about Rome instead." does, and its
turn is answered (``edge/realtime/backchannel.py``)."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest_asyncio

from edge.shared.settings import BackchannelSettings, VadSettings
from tests.edge.conftest import session_id
from tests.fixtures.edge import EdgeFactory, RunningEdge
from tests.fixtures.region import RegionFactory
from voicemesh.realtime import client, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio

OUT_BYTES_PER_S = 48_000
SLOW_CHARS_PER_S = 10.0
"""Slower than Kokoro speaks: once this much audio per character of the first clause has arrived,
the first clause has been played whole (tests/edge/test_barge_in.py)."""
STORY = "Tell long, detailed stories of many sentences."
QUESTION = "Tell me a long story about a dragon."


@pytest_asyncio.fixture(scope="module")
async def patient_edge(edge_factory: EdgeFactory, region_factory: RegionFactory) -> RunningEdge:
    """The edge fixture's region, behind an edge that waits as long as it takes for a short speech's
    words: on a busy 2-core machine the region's STT beside the answer's LLM and TTS can take longer
    than the default ``transcribe_timeout_s``, which would make it an (unheard) interruption."""
    vad = VadSettings(backchannel=BackchannelSettings(transcribe_timeout_s=120.0))
    return await edge_factory([region_factory("edge-test", max_concurrent=2, max_queue=4)], vad=vad)


async def _talk_over(
    edge: RunningEdge, question: FloatAudio, over: FloatAudio, responses: int
) -> tuple[list[Any], str]:
    """Ask ``question``, say ``over`` once the answer's first clause was played, and read every event
    until ``responses`` ``response.done``s; the events and the session's id."""
    silence = np.zeros(CLIENT_RATE // 2, dtype=np.float32)
    done = 0
    events: list[Any] = []
    delta_times: list[float] = []
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        sid = session_id(await conn.recv())
        # (a few sentences: long enough to talk over, short enough for a busy 2-core machine)
        await conn.session.update(
            session={"type": "realtime", "instructions": STORY, "max_output_tokens": 80}
        )
        await stream_audio(conn, np.concatenate([question, silence, silence]), pace=1.5)
        talker: asyncio.Task[None] | None = None
        first_clause, audio_s = "", 0.0
        try:
            async with asyncio.timeout(300):
                async for event in conn:
                    events.append(event)
                    if event.type == "response.output_audio.delta":
                        delta_times.append(time.monotonic())
                    if event.type == "response.output_audio_transcript.delta" and not first_clause:
                        first_clause = event.delta
                    if event.type == "response.output_audio.delta" and talker is None:
                        audio_s += len(base64.b64decode(event.delta)) / OUT_BYTES_PER_S
                        if first_clause and audio_s >= len(first_clause) / SLOW_CHARS_PER_S:
                            talker = asyncio.create_task(stream_audio(conn, np.concatenate([over, silence])))
                    done += event.type == "response.done"
                    if done == responses:
                        break
        except TimeoutError:
            tail = [e.type for e in events if e.type != "response.output_audio.delta"][-12:]
            raise AssertionError(f"no end after 300 s; last events: {tail}") from None
        assert talker is not None
        await talker
    gaps = np.diff(delta_times) if len(delta_times) > 1 else np.zeros(1)
    print(f"longest wait between two audio deltas: {gaps.max():.2f} s")  # (the pause, shown with -s)
    return events, sid


def _types(events: list[Any]) -> list[str]:
    return [e.type for e in events]


async def test_yeah_over_the_answer_does_not_stop_it(
    patient_edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    edge = patient_edge
    events, sid = await _talk_over(edge, say(QUESTION), say("Yeah."), responses=1)
    done = events[-1]
    assert done.response.status == "completed", done.response.status_details
    types = _types(events)
    # Only the question's speech and item: the backchannel left no trace.
    assert types.count("input_audio_buffer.speech_started") == 1, types
    assert types.count("input_audio_buffer.committed") == 1, types
    heard = done.response.output[0].content[0].transcript
    full = "".join(e.delta for e in events if e.type == "response.output_audio_transcript.delta")
    assert heard.strip() == full.strip(), (heard, full)  # all of it was sent, none cut
    state = await edge.services.sessions.load(sid)
    assert state is not None
    assert [m.role for m in state.history] == ["user", "assistant"]


async def test_a_real_interruption_stops_the_answer_and_is_answered(
    patient_edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    edge = patient_edge
    events, sid = await _talk_over(edge, say(QUESTION), say("Wait, tell me about Rome instead."), responses=2)
    dones = [e for e in events if e.type == "response.done"]
    first, second = dones
    assert first.response.status == "cancelled"
    assert first.response.status_details.reason == "turn_detected"
    types = _types(events)
    assert types.count("input_audio_buffer.speech_started") == 2, types
    # Truncated at what was heard: a non-empty prefix of what was said.
    heard = first.response.output[0].content[0].transcript
    assert heard.strip()
    # The interruption became a turn and was answered.
    assert second.response.status == "completed", second.response.status_details
    transcripts = [
        e.transcript for e in events if e.type == "conversation.item.input_audio_transcription.completed"
    ]
    # (Whisper base may mishear the rest: "tell me I'm out from instead" was heard once)
    assert any(t.lower().startswith("wait") for t in transcripts), transcripts
    state = await edge.services.sessions.load(sid)
    assert state is not None
    assert [m.role for m in state.history] == ["user", "assistant", "user", "assistant"]
    assert state.history[1].content == heard
