"""Pipecat's stock OpenAI Realtime service against a running voicemesh edge: a Pipeline that greets
(its system instruction and an empty LLMContext), then (given a WAV) hears a spoken question as
InputAudioRawFrames, and writes the answers' audio to a WAV. A real app puts a transport (Daily,
WebRTC, a local microphone) where this script reads and writes WAVs.

Run (with `voicemesh up` running; it prints the API key):

    pip install 'pipecat-ai[openai]==1.14.0'
    espeak-ng -w question.wav "What is the capital of France?"
    VOICEMESH_API_KEY=vm-... python examples/pipecat_pipeline.py question.wav answer.wav
"""

from __future__ import annotations

import argparse
import asyncio

from _common import CHUNK, RATE, parse_args, read_pcm24k, write_pcm24k
from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InputAudioRawFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.openai.realtime import events
from pipecat.services.openai.realtime.llm import OpenAIRealtimeLLMService
from pipecat.workers.runner import WorkerRunner


class Speaker(FrameProcessor):
    """Stands in for an output transport: prints the answer's text, keeps its audio."""

    def __init__(self) -> None:
        super().__init__()
        self.audio = bytearray()
        self.answers = asyncio.Queue[None]()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TTSTextFrame):
            print(frame.text, end="", flush=True)
        elif isinstance(frame, TTSAudioRawFrame):
            self.audio += frame.audio
        elif isinstance(frame, LLMFullResponseEndFrame):
            print()
            self.answers.put_nowait(None)
        await self.push_frame(frame, direction)


async def main(args: argparse.Namespace) -> None:
    llm = OpenAIRealtimeLLMService(
        api_key=args.key,
        base_url=f"{args.url}/realtime",
        settings=OpenAIRealtimeLLMService.Settings(
            system_instruction="You are a helpful voice assistant. Greet the user, then answer briefly.",
            session_properties=events.SessionProperties(
                audio=events.AudioConfiguration(output=events.AudioOutput(voice="alloy"))
            ),
        ),
    )
    speaker = Speaker()
    worker = PipelineWorker(Pipeline([llm, speaker]), cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=True)
    await runner.add_workers(worker)
    running = asyncio.create_task(runner.run())

    await worker.queue_frame(LLMContextFrame(context=LLMContext()))  # run now: the greeting
    await speaker.answers.get()
    if args.question:
        pcm = read_pcm24k(args.question)
        for i in range(0, len(pcm), CHUNK):  # 40 ms frames, paced like a microphone
            await worker.queue_frame(
                InputAudioRawFrame(audio=pcm[i : i + CHUNK], sample_rate=RATE, num_channels=1)
            )
            await asyncio.sleep(0.04)
        await speaker.answers.get()
    await worker.queue_frame(EndFrame())
    await running
    write_pcm24k(args.out, bytes(speaker.audio))
    print(f"audio of the answers: {args.out}")


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, "ws://127.0.0.1:8080/v1")))
