"""LiveKit Agents' stock OpenAI realtime model (livekit-plugins-openai) against a running voicemesh
edge, with the plugin's defaults (voice ``marin``, ``semantic_vad``, ``max_output_tokens: "inf"``).

In an agent, the only change is where the model points:

    session = AgentSession(llm=openai.realtime.RealtimeModel(base_url="http://127.0.0.1:8080/v1",
                                                             api_key=VOICEMESH_API_KEY))

This script drives the same ``RealtimeModel`` without a LiveKit room, as ``AgentSession`` does: a
greeting (``generate_reply(instructions=...)``), then (given a WAV) a spoken question pushed as
``rtc.AudioFrame``s; the answers' audio is written to a WAV.

Run (with `voicemesh up` running; it prints the API key):

    pip install 'livekit-agents==1.8.9' 'livekit-plugins-openai==1.8.9'
    espeak-ng -w question.wav "What is the capital of France?"
    VOICEMESH_API_KEY=vm-... python examples/livekit_agent.py question.wav answer.wav
"""

from __future__ import annotations

import argparse
import asyncio

from _common import CHUNK, RATE, parse_args, read_pcm24k, write_pcm24k
from livekit import rtc
from livekit.agents import llm
from livekit.plugins.openai.realtime import RealtimeModel


async def play(generation: llm.GenerationCreatedEvent, audio: bytearray) -> None:
    """What an agent's output does with a generation: print its text, keep its audio."""
    async for message in generation.message_stream:

        async def text(m: llm.MessageGeneration = message) -> None:
            async for piece in m.text_stream:
                print(piece, end="", flush=True)

        async def sound(m: llm.MessageGeneration = message) -> None:
            async for frame in m.audio_stream:
                audio.extend(frame.data.cast("B"))

        await asyncio.gather(text(), sound())
    print()


async def main(args: argparse.Namespace) -> None:
    model = RealtimeModel(base_url=args.url, api_key=args.key)
    session = model.session()
    audio = bytearray()
    answers: asyncio.Queue[asyncio.Task[None]] = asyncio.Queue()
    session.on("generation_created", lambda gen: answers.put_nowait(asyncio.create_task(play(gen, audio))))
    session.on("error", lambda err: print(f"error: {err.error}"))
    try:
        await session.generate_reply(instructions="Greet the user in one sentence.")
        await (await answers.get())
        if args.question:
            pcm = read_pcm24k(args.question)
            for i in range(0, len(pcm), CHUNK):  # 40 ms frames, paced like a microphone
                chunk = pcm[i : i + CHUNK]
                session.push_audio(rtc.AudioFrame(chunk, RATE, 1, len(chunk) // 2))
                await asyncio.sleep(0.04)
            await (await answers.get())  # semantic_vad ends the turn; the edge answers
    finally:
        await session.aclose()
        await model.aclose()
    write_pcm24k(args.out, bytes(audio))
    print(f"audio of the answers: {args.out}")


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, "http://127.0.0.1:8080/v1")))
