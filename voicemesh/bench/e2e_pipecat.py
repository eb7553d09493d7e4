"""The Pipecat side of ``voicemesh bench e2e``: stock Pipecat 1.14 pipelines, one per caller, in a
process of their own (``python -m voicemesh.bench.e2e_pipecat JOB.json OUT.json``).

Each pipeline is what Pipecat's quickstart builds for local models, unmodified: Whisper STT
(faster-whisper), an ``LLMContextAggregatorPair`` whose user side runs Silero VAD (stop 0.2 s) with
the default turn strategies (smart-turn v3), ``OpenAILLMService`` on the same vLLM, and Kokoro TTS
with the default sentence aggregation. Where a transport would be, a ``Mic`` pushes the utterance as
20 ms ``InputAudioRawFrame``s at real-time pace, then silence, and an ``Ear`` timestamps the first
``TTSAudioRawFrame``. A ``Tap`` after STT records the transcript.

Why a process: a stock Pipecat bot runs in a process of its own (Pipecat's runner and Pipecat Cloud
start one per deployment, with its sessions as tasks), just as voicemesh's edge and region are
processes; in the bench's own process it would share the event loop and GIL with the voicemesh
clients. One process per pass: models load before the clock starts, and nothing lingers between
passes while voicemesh is measured.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.kokoro.tts import KokoroTTSService
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.workers.runner import WorkerRunner

from voicemesh.bench.e2e_report import Sample
from voicemesh.realtime import tick
from wire.audio import STT_RATE, float_to_pcm16, read_wav

FRAME_MS = 20
"""Pipecat's transports hand the pipeline 20 ms of microphone audio at a time."""
TURN_TIMEOUT_S = 120.0
STOP_FRAME_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Job:
    """What the bench asks of one pass: models, prompt, callers and each caller's utterances."""

    llm_url: str
    llm_model: str
    whisper_dir: str
    kokoro_model: str
    kokoro_voices: str
    voice: str
    system_prompt: str
    max_tokens: int
    temperature: float
    callers: int
    pass_no: int
    utterances: list[tuple[str, str, float]]
    """(text, 16 kHz WAV path, seconds from the WAV's start to the end of its speech)."""
    orders: list[list[int]]
    """Per caller, the utterance indexes it speaks, one after another."""
    trailing_silence_s: float = 3.0


class Ear(FrameProcessor):
    """Stands where the output transport would: notes the first audio after the end of the caller's
    speech (``speech_end``, set by the ``Mic``), the spoken text from then on, and whether an answer
    is still being written (between ``LLMFullResponseStartFrame`` and its end frame, which
    Pipecat's TTS queues behind the answer's audio)."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []
        self.reset()

    def reset(self) -> None:
        self.speech_end: float | None = None
        self.first_audio_at: float | None = None
        self.first_text = ""
        self.text = ""
        self.answering = False
        self.last_activity = 0.0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        now = time.monotonic()
        if direction == FrameDirection.DOWNSTREAM and self.speech_end is not None:
            if isinstance(frame, TTSAudioRawFrame):
                self.first_audio_at = self.first_audio_at or now
                self.last_activity = now
            elif isinstance(frame, TTSTextFrame):
                self.first_text = self.first_text or frame.text
                self.text += (" " if self.text else "") + frame.text
            elif isinstance(frame, LLMFullResponseStartFrame):
                self.answering, self.last_activity = True, now
            elif isinstance(frame, LLMFullResponseEndFrame):
                self.answering, self.last_activity = False, now
        if isinstance(frame, ErrorFrame):
            self.errors.append(str(frame.error))
        await self.push_frame(frame, direction)

    def settled(self, quiet_s: float = 1.5) -> bool:
        """The answer was heard and nothing more came for ``quiet_s`` (Pipecat may answer again when
        a late transcript starts a new user turn: that answer belongs to this turn too)."""
        return (
            self.first_audio_at is not None
            and not self.answering
            and time.monotonic() - self.last_activity > quiet_s
        )


class Tap(FrameProcessor):
    """Records the user's transcript as STT emits it, and passes everything on."""

    def __init__(self) -> None:
        super().__init__()
        self.transcript = ""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame):
            self.transcript = (self.transcript + " " + frame.text).strip()
        await self.push_frame(frame, direction)


class Mic(FrameProcessor):
    """Stands where the input transport would: ``speak`` pushes audio at real-time pace."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)

    async def speak(
        self, pcm: bytes, speech_end_s: float, ear: Ear, until: asyncio.Event, max_s: float
    ) -> None:
        """Push ``pcm`` (16 kHz) in 20 ms frames, then silence until ``until`` is set (or ``max_s``);
        tells ``ear`` when the frame holding the last speech sample was pushed (monotonic)."""
        step = STT_RATE * FRAME_MS // 1000 * 2
        silence = bytes(step)
        end_byte = int(speech_end_s * STT_RATE) * 2
        t0 = time.monotonic()
        i = 0
        while True:
            chunk = pcm[i * step : (i + 1) * step]
            if not chunk:
                if until.is_set() or time.monotonic() - t0 > max_s:
                    break
                chunk = silence
            await self.push_frame(InputAudioRawFrame(audio=chunk, sample_rate=STT_RATE, num_channels=1))
            if ear.speech_end is None and (i + 1) * step >= end_byte:
                ear.speech_end = time.monotonic()
            i += 1
            await tick(t0, i, FRAME_MS / 1000)


@dataclass
class Caller:
    mic: Mic
    tap: Tap
    ear: Ear
    worker: PipelineWorker


def build(job: Job) -> Caller:
    stt = WhisperSTTService(
        device="cpu", compute_type="int8", settings=WhisperSTTService.Settings(model=job.whisper_dir)
    )
    llm = OpenAILLMService(
        api_key="none",
        base_url=job.llm_url,
        settings=OpenAILLMService.Settings(
            model=job.llm_model, max_completion_tokens=job.max_tokens, temperature=job.temperature
        ),
    )
    tts = KokoroTTSService(
        model_path=job.kokoro_model,
        voices_path=job.kokoro_voices,
        settings=KokoroTTSService.Settings(voice=job.voice),
        # The one setting off Pipecat's defaults: Kokoro on 2 busy cores can take over the default
        # 3 s to voice a whole sentence; Pipecat then ends that audio context as "completed with no
        # audio" and, three times in a row, marks the TTS unusable and speaks no more. A longer wait
        # changes nothing else (the first audio goes out as soon as Kokoro returns it).
        stop_frame_timeout_s=STOP_FRAME_TIMEOUT_S,
    )
    context = LLMContext([{"role": "system", "content": job.system_prompt}])
    aggregators = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.2))),
    )
    mic, tap, ear = Mic(), Tap(), Ear()
    pipeline = Pipeline([mic, stt, tap, aggregators.user(), llm, tts, ear, aggregators.assistant()])
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=STT_RATE, audio_out_sample_rate=24000),
        cancel_on_idle_timeout=False,
    )
    return Caller(mic, tap, ear, worker)


async def _answered(ear: Ear, done: asyncio.Event) -> None:
    while not ear.settled():  # noqa: ASYNC110 (settling is a quiet period: a time, not an event)
        await asyncio.sleep(0.1)
    done.set()


async def _turn(job: Job, caller: Caller, index: int, utterance: int) -> Sample:
    text, wav, speech_end_s = job.utterances[utterance]
    samples, _ = read_wav(wav)
    sample = Sample("pipecat", job.callers, job.pass_no, index, utterance, text)
    caller.ear.reset()
    caller.tap.transcript = ""
    done = asyncio.Event()
    speaking = asyncio.create_task(
        caller.mic.speak(float_to_pcm16(samples), speech_end_s, caller.ear, done, TURN_TIMEOUT_S)
    )
    try:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            await _answered(caller.ear, done)
    except TimeoutError:
        sample.error = "no complete answer within the turn timeout"
        done.set()
    await speaking
    if caller.ear.first_audio_at is not None and caller.ear.speech_end is not None:
        sample.ttfa_s = caller.ear.first_audio_at - caller.ear.speech_end
    sample.transcript = caller.tap.transcript
    sample.first_chunk_text = caller.ear.first_text
    sample.reply_text = caller.ear.text
    if caller.ear.errors and not sample.error:
        sample.error = caller.ear.errors[0]
    return sample


async def _run_caller(job: Job, caller: Caller, index: int) -> list[Sample]:
    return [await _turn(job, caller, index, u) for u in job.orders[index]]


async def run(job: Job) -> list[Sample]:
    callers = [build(job) for _ in range(job.callers)]
    runner = WorkerRunner(handle_sigint=False)
    started = [asyncio.Event() for _ in callers]
    for c, ev in zip(callers, started, strict=True):

        async def on_started(_worker: Any, _frame: Any, ev: asyncio.Event = ev) -> None:
            ev.set()

        c.worker.add_event_handler("on_pipeline_started", on_started)
    await runner.add_workers(*(c.worker for c in callers))
    running = asyncio.create_task(runner.run())
    try:
        async with asyncio.timeout(120):
            await asyncio.gather(*(ev.wait() for ev in started))
        print(f"pipecat: {job.callers} pipeline(s) ready", flush=True)
        per_caller = await asyncio.gather(*(_run_caller(job, c, i) for i, c in enumerate(callers)))
        return [s for samples in per_caller for s in samples]
    finally:
        for c in callers:
            await c.worker.cancel()
        async with asyncio.timeout(30):
            await running


def main() -> None:
    job_path, out_path = Path(sys.argv[1]), Path(sys.argv[2])
    raw = json.loads(job_path.read_text())
    job = Job(**{**raw, "utterances": [tuple(u) for u in raw["utterances"]]})
    samples = asyncio.run(run(job))
    out_path.write_text(json.dumps([asdict(s) for s in samples]))


if __name__ == "__main__":
    main()
