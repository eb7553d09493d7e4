"""A drain on a busy machine (issue 34): the VAD runs behind the audio it was given, so speech the
client has already sent may not have been heard yet when the edge drains. That speech is a turn
being spoken: the drain waits for it to be heard, answered and snapshotted, instead of closing on
a session that only looked idle (the caller's turn was lost: no item, no answer, on either edge).

A real ``RealtimeSession`` (``edge.testing``) with a stand-in VAD whose answers are held back until
the test lets them through (``LaggingVad``: the lag of a loaded machine, made deterministic); the
router is scripted. What is under test is the drain's idea of idle, not the models.
"""

from __future__ import annotations

import asyncio
import base64
import json

from edge.shared.protocols import ChunkSource, SpeechProbability
from edge.testing import ScriptedRouter, SessionHarness, memory_services, silence, spoken_reply, tone
from edge.testing.models import EnergyStream, EnergyVad


class _Held:
    """A chunk source whose answer waits for the gate (the VAD thread is behind)."""

    def __init__(self, source: ChunkSource, gate: asyncio.Event) -> None:
        self.source, self.gate = source, gate

    async def answer(self, stream: EnergyStream) -> None:
        await self.gate.wait()
        stream.push(self.source)


class LaggingVad(EnergyVad):
    """``EnergyVad`` that hears nothing until ``catch_up()``: then everything, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    def stream(self) -> SpeechProbability:
        vad, inner = self, EnergyStream(self)

        class _Lagging:
            def push(self, source: ChunkSource) -> None:
                # (one chunk is pushed at a time, the next once this one is heard: order is kept)
                task = asyncio.get_running_loop().create_task(_Held(source, vad.gate).answer(inner))
                vad._tasks.add(task)
                task.add_done_callback(vad._tasks.discard)

        return _Lagging()

    def catch_up(self) -> None:
        self.gate.set()


def append(pcm: bytes) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()})


async def test_speech_the_lagging_vad_has_not_heard_is_answered_before_the_drain_closes() -> None:
    vad = LaggingVad()
    services = memory_services(ScriptedRouter(spoken_reply("Hello there.")), vad=vad)
    async with SessionHarness(services) as edge:
        # The client has said its whole turn; the VAD has heard none of it yet.
        await edge.session.handle(append(silence(0.2) + tone(0.6) + silence(1.0)))
        draining = asyncio.create_task(edge.session.drain(wait_s=60))
        for _ in range(20):  # let a drain that takes the session for idle run to its end
            await asyncio.sleep(0)
        assert not draining.done(), "the drain closed a session whose speech was not heard yet"
        vad.catch_up()
        await asyncio.wait_for(draining, 60)  # (a guard against a hang only)
        types = [e["type"] for e in edge.sent]
        assert "input_audio_buffer.speech_stopped" in types
        done = edge.of_type("response.done")
        assert [d["response"]["status"] for d in done] == ["completed"]
        assert types.index("response.done") < types.index("voicemesh.session.resume_required")
        snapshot = await services.sessions.load_snapshot(edge.state.id)
    assert snapshot is not None and [i["role"] for i in snapshot.items] == ["user", "assistant"]
