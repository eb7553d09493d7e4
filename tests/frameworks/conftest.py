"""Shared set-up for the client-framework tests: the real edge, spoken questions, and small
harnesses that drive Pipecat's and LiveKit's *unmodified* realtime services against it.

Each test talks to the ``edge`` fixture (tests/edge/conftest.py: a real edge in front of a real
region, Whisper -> vLLM -> Kokoro) exactly as a user of the framework would: the only things
changed from the framework's defaults are the base URL and the API key. Nothing is patched;
the harnesses only feed frames in and record what comes out.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tests.edge.conftest import edge, say  # noqa: F401  (fixtures, re-exported for this directory)
from wire.audio import CLIENT_RATE, FloatAudio, float_to_pcm16

TURN_TIMEOUT_S = 180.0
"""Upper bound on one turn on a busy 2-core machine: a hang fails the test, slowness does not."""

CHUNK_MS = 40
QUESTION = "What is the capital of France?"
SECOND_QUESTION = "Name one colour of the rainbow."
LONG_ANSWER = "Tell me a long story about a dragon and a knight, in many sentences."


@pytest.fixture
def question_pcm(say: Callable[[str], FloatAudio]) -> Callable[[str], bytes]:  # noqa: F811
    """``question_pcm(text)`` -> 24 kHz PCM16 of espeak-ng saying ``text``, then 1 s of silence
    so the server VAD sees the end of the turn."""

    def make(text: str) -> bytes:
        silence = np.zeros(CLIENT_RATE, dtype=np.float32)
        return float_to_pcm16(np.concatenate([say(text), silence]))

    return make


def chunks(pcm: bytes, chunk_ms: int = CHUNK_MS) -> list[bytes]:
    step = CLIENT_RATE * chunk_ms // 1000 * 2
    return [pcm[i : i + step] for i in range(0, len(pcm), step)]


async def paced(pcm: bytes, send: Callable[[bytes], Any], pace: float = 1.5) -> None:
    """Call ``send(chunk)`` for each 40 ms of ``pcm`` at ``pace`` x real time, as a microphone
    would (the edge's VAD needs no real-time pacing, but frameworks are written for it)."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    for i, chunk in enumerate(chunks(pcm)):
        result = send(chunk)
        if asyncio.iscoroutine(result):
            await result
        await asyncio.sleep(max(0.0, t0 + (i + 1) * CHUNK_MS / 1000 / pace - loop.time()))


@dataclass
class Recorder:
    """Everything a harness saw, with a condition to wait on."""

    items: list[Any] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def add(self, item: Any) -> None:
        async with self.changed:
            self.items.append(item)
            self.changed.notify_all()

    async def wait_for(
        self, predicate: Callable[[list[Any]], bool], timeout_s: float = TURN_TIMEOUT_S
    ) -> None:
        async with asyncio.timeout(timeout_s), self.changed:
            await self.changed.wait_for(lambda: predicate(self.items))


def client_events(event_type: str) -> dict[str, float]:
    """How many ``event_type`` client events the in-process edge has handled, by outcome (``ok`` or
    the error code), from its Prometheus counter: what a framework sent that a test cannot see."""
    from prometheus_client import REGISTRY

    counts: dict[str, float] = {}
    for metric in REGISTRY.collect():
        for sample in metric.samples:
            if sample.name == "voicemesh_edge_client_events_total" and sample.labels["type"] == event_type:
                counts[sample.labels["outcome"]] = sample.value
    return counts


# --- Pipecat ---------------------------------------------------------------------------------


def pipecat_service(edge_url: str, api_key: str, **kwargs: Any) -> Any:
    """Pipecat's stock ``OpenAIRealtimeLLMService`` aimed at the edge (``ws://host:port/v1``)."""
    from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService

    return OpenAIRealtimeLLMService(api_key=api_key, base_url=f"{edge_url}/realtime", **kwargs)


@dataclass
class PipecatRun:
    """A ``Pipeline([source, service, sink])`` run by a ``PipelineWorker`` (``PipelineTask``'s
    current name), as ``pipecat.tests.utils.run_test`` builds it, kept open across turns.
    ``frames`` records what reaches the sink (downstream) and the source (upstream: errors,
    user transcriptions)."""

    worker: Any
    frames: Recorder

    async def send(self, frame: Any) -> None:
        await self.worker.queue_frame(frame)

    async def speak(self, pcm: bytes) -> None:
        from pipecat.frames.frames import InputAudioRawFrame

        await paced(
            pcm, lambda c: self.send(InputAudioRawFrame(audio=c, sample_rate=CLIENT_RATE, num_channels=1))
        )

    def of_type(self, name: str) -> list[Any]:
        return [f for f in self.frames.items if type(f).__name__ == name]

    async def wait_for_frames(self, name: str, count: int = 1) -> None:
        await self.frames.wait_for(lambda items: sum(type(f).__name__ == name for f in items) >= count)


@contextlib.asynccontextmanager
async def pipecat_run(service: Any) -> AsyncIterator[PipecatRun]:
    from pipecat.frames.frames import Frame, StartFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.workers.runner import WorkerRunner

    frames = Recorder()

    class Tap(FrameProcessor):
        """Records the frames that travel ``direction`` past it, and passes everything on."""

        def __init__(self, direction: Any) -> None:
            super().__init__(enable_direct_mode=True)
            self._direction = direction

        async def process_frame(self, frame: Frame, direction: Any) -> None:
            await super().process_frame(frame, direction)
            if direction == self._direction and not isinstance(frame, StartFrame):
                await frames.add(frame)
            await self.push_frame(frame, direction)

    pipeline = Pipeline([Tap(FrameDirection.UPSTREAM), service, Tap(FrameDirection.DOWNSTREAM)])
    worker = PipelineWorker(pipeline, cancel_on_idle_timeout=False)
    started = asyncio.Event()

    async def _started(_worker: Any, _frame: Any) -> None:
        started.set()

    worker.add_event_handler("on_pipeline_started", _started)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    task = asyncio.create_task(runner.run())
    try:
        async with asyncio.timeout(60):
            await started.wait()
        yield PipecatRun(worker, frames)
    finally:
        await worker.cancel()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(30):
                await task


def pipecat_errors(run: PipecatRun) -> list[str]:
    return [str(f.error) for f in run.of_type("ErrorFrame")]


# --- LiveKit ---------------------------------------------------------------------------------


@dataclass
class LiveKitSession:
    """A LiveKit ``RealtimeSession`` driven without a room: audio pushed as ``rtc.AudioFrame``s,
    every server event it received (``openai_server_event_received``), its errors, and each
    generation's text and audio as its message streams delivered them."""

    session: Any
    events: Recorder
    errors: list[Any] = field(default_factory=list)
    generations: list[dict[str, Any]] = field(default_factory=list)

    mic: asyncio.Task[None] | None = None
    """Silence after each utterance, as an open microphone in a room sends: ``semantic_vad`` may
    wait out its eagerness timeout in it (a turn the words call unfinished)."""

    def _push(self, chunk: bytes) -> None:
        from livekit import rtc

        self.session.push_audio(rtc.AudioFrame(chunk, CLIENT_RATE, 1, len(chunk) // 2))

    async def speak(self, pcm: bytes) -> None:
        await self.mute()
        await paced(pcm, self._push)
        self.mic = asyncio.get_running_loop().create_task(self._open_mic())

    async def _open_mic(self) -> None:
        second = bytes(2 * CLIENT_RATE)
        while True:
            await paced(second, self._push, pace=1.0)

    async def mute(self) -> None:
        if self.mic is not None:
            self.mic.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.mic
            self.mic = None

    def server_events(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events.items if e.get("type") == kind]

    async def wait_for_event(self, kind: str, count: int = 1) -> None:
        await self.events.wait_for(lambda items: sum(e.get("type") == kind for e in items) >= count)


@contextlib.asynccontextmanager
async def livekit_session(edge_http_url: str, api_key: str, **options: Any) -> AsyncIterator[LiveKitSession]:
    """``livekit.plugins.openai.realtime.RealtimeModel(base_url=<edge>/v1, api_key=...)`` with the
    plugin's defaults (voice ``marin``, ``semantic_vad``, ``max_output_tokens: "inf"``) unless
    ``options`` override them, and one ``model.session()``."""
    from livekit.plugins.openai.realtime import RealtimeModel

    model = RealtimeModel(base_url=f"{edge_http_url}/v1", api_key=api_key, **options)
    session = model.session()
    lk = LiveKitSession(session, Recorder())
    loop = asyncio.get_running_loop()
    readers: list[asyncio.Task[None]] = []

    def on_server_event(event: dict[str, Any]) -> None:
        readers.append(loop.create_task(lk.events.add(event)))

    async def read_generation(gen: Any) -> None:
        try:
            await read_messages(gen)
        except Exception as exc:  # a reader's failure is the test's failure, not a silent hang
            lk.errors.append(exc)
            await lk.events.add({"type": "harness.reader_failed"})

    async def read_messages(gen: Any) -> None:
        async for msg in gen.message_stream:
            record: dict[str, Any] = {"message_id": msg.message_id, "text": "", "audio": bytearray()}
            lk.generations.append(record)

            async def read_text(m: Any = msg, r: dict[str, Any] = record) -> None:
                async for piece in m.text_stream:
                    r["text"] += str(piece)

            async def read_audio(m: Any = msg, r: dict[str, Any] = record) -> None:
                async for frame in m.audio_stream:
                    r["audio"] += bytes(frame.data.cast("B"))

            await asyncio.gather(read_text(), read_audio())
            record["modalities"] = await msg.modalities
            record["done"] = True
            await lk.events.add({"type": "harness.message_done"})

    session.on("openai_server_event_received", on_server_event)
    session.on("error", lk.errors.append)
    session.on("generation_created", lambda gen: readers.append(loop.create_task(read_generation(gen))))
    try:
        yield lk
    finally:
        await lk.mute()
        async with asyncio.timeout(30):
            await session.aclose()
            await model.aclose()
        for task in readers:
            task.cancel()


def finished_generations(lk: LiveKitSession) -> list[dict[str, Any]]:
    return [g for g in lk.generations if g.get("done")]
