"""The Pipecat side of ``voicemesh bench e2e``: stock Pipecat 1.14 pipelines, one per caller, in a
process of their own (``python -m voicemesh.bench.e2e_pipecat JOB.json OUT.json``).

Each pipeline is what Pipecat's quickstart builds for local models, unmodified: Whisper STT
(faster-whisper), an ``LLMContextAggregatorPair`` whose user side runs Silero VAD (stop 0.2 s) with
the turn strategies of the pass's mode, ``OpenAILLMService`` on the same vLLM, and Kokoro TTS with
the default sentence aggregation. Two modes: ``smart_turn``, Pipecat's default strategies (the turn
ends when Smart Turn v3 says so); ``vad_only``, the default start strategies and
``SpeechTimeoutUserTurnStopStrategy`` at its defaults (the turn ends 0.6 s after Silero's stop, with
a transcript in: Pipecat's own VAD-only configuration, no Smart Turn). Where the transports would be
are a ``Mic``, an ``Ear`` and a ``Tap`` (``e2e_pipecat_frames``).

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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.kokoro.tts import KokoroTTSService
from pipecat.services.openai.llm import OpenAILLMService
from pipecat.services.whisper.stt import WhisperSTTService
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies
from pipecat.workers.runner import WorkerRunner

from voicemesh.bench.e2e_caller import Speaker, TurnLog
from voicemesh.bench.e2e_pipecat_frames import FRAME_BYTES, Ear, Mic, Tap
from voicemesh.bench.e2e_report import Sample
from wire.audio import STT_RATE, float_to_pcm16, read_wav

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
    mode: str
    """``smart_turn`` (Pipecat's default) or ``vad_only``."""
    utterances: list[tuple[str, str, float, bool, str, str]]
    """(text, 16 kHz WAV path, seconds from the WAV's start to the end of its speech, whether it has
    a pause, the backchannel said during the answer ("" for none), the backchannel's WAV)."""
    orders: list[list[int]]
    """Per caller, the utterance indexes it speaks, one after another."""
    trailing_silence_s: float = 3.0


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
    if job.mode not in ("smart_turn", "vad_only"):
        raise ValueError(f"unknown Pipecat turn mode {job.mode!r}")
    strategies = (
        UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy()]) if job.mode == "vad_only" else None
    )  # None: Pipecat's defaults (Smart Turn v3)
    aggregators = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=0.2)), user_turn_strategies=strategies
        ),
    )
    mic, tap, ear = Mic(), Tap(), Ear()
    pipeline = Pipeline([mic, stt, tap, aggregators.user(), llm, tts, ear, aggregators.assistant()])
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(audio_in_sample_rate=STT_RATE, audio_out_sample_rate=24000),
        cancel_on_idle_timeout=False,
    )
    return Caller(mic, tap, ear, worker)


def _pcm(wav: str) -> bytes:
    samples, _ = read_wav(wav)  # (made at STT_RATE by e2e_inputs)
    return float_to_pcm16(samples)


async def _answered(speaker: Speaker, done: asyncio.Event) -> None:
    while not speaker.settled():  # noqa: ASYNC110 (settling is a quiet period: a time, not an event)
        await asyncio.sleep(0.1)
    done.set()


async def _turn(job: Job, caller: Caller, index: int, utterance: int) -> Sample:
    text, wav, speech_end_s, paused, backchannel, bc_wav = job.utterances[utterance]
    sample = Sample(
        "pipecat", job.mode, job.callers, job.pass_no, index, utterance, text, paused, backchannel
    )
    log = TurnLog()
    caller.ear.reset(log)
    caller.tap.log, caller.tap.heard = log, []
    speaker = Speaker(
        log, _pcm(wav), int(speech_end_s * STT_RATE) * 2, _pcm(bc_wav) if backchannel else b"", FRAME_BYTES
    )
    done = asyncio.Event()
    speaking = asyncio.create_task(caller.mic.speak(speaker, done, TURN_TIMEOUT_S))
    try:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            await _answered(speaker, done)
    except TimeoutError:
        sample.error = "no complete answer within the turn timeout"
        done.set()
    await speaking
    sample.transcript = caller.tap.transcript()
    sample.first_chunk_text = caller.ear.first_text
    sample.reply_text = caller.ear.text
    if caller.ear.errors and not sample.error:
        sample.error = caller.ear.errors[0]
    return log.into(sample)


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
    print(f"pipecat: turn mode {job.mode}", flush=True)
    samples = asyncio.run(run(job))
    out_path.write_text(json.dumps([asdict(s) for s in samples]))


if __name__ == "__main__":
    main()
