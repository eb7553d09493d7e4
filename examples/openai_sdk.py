"""The stock openai SDK against a running voicemesh edge: a greeting, then (given a WAV) a spoken
question, with the answer's audio written to a WAV.

Run (with `voicemesh up` running; it prints the API key):

    espeak-ng -w question.wav "What is the capital of France?"
    VOICEMESH_API_KEY=vm-... python examples/openai_sdk.py question.wav answer.wav

`--url` defaults to ws://127.0.0.1:8080/v1 (what `voicemesh up` serves).
"""

from __future__ import annotations

import argparse
import asyncio
import base64

from _common import CHUNK, parse_args, read_pcm24k, write_pcm24k
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection


async def reply(conn: AsyncRealtimeConnection) -> bytes:
    """Print the answer's transcript as it comes; return its audio."""
    audio = bytearray()
    async for event in conn:
        if event.type == "response.output_audio_transcript.delta":
            print(event.delta, end="", flush=True)
        elif event.type == "response.output_audio.delta":
            audio += base64.b64decode(event.delta)
        elif event.type == "conversation.item.input_audio_transcription.completed":
            print(f"you: {event.transcript}\nassistant: ", end="", flush=True)
        elif event.type == "error":
            print(f"\nerror: {event.error.message}")
        elif event.type == "response.done":
            print(f"\n[{event.response.status}, usage: {event.response.usage}]")
            return bytes(audio)
    return bytes(audio)


async def main(args: argparse.Namespace) -> None:
    client = AsyncOpenAI(api_key=args.key, websocket_base_url=args.url)
    async with client.realtime.connect(model="voicemesh") as conn:
        await conn.session.update(
            session={
                "type": "realtime",
                "instructions": "You are a helpful voice assistant. Answer in one or two sentences.",
                "audio": {"output": {"voice": "alloy"}, "input": {"transcription": {"model": "whisper-1"}}},
            }
        )
        print("assistant: ", end="")
        await conn.response.create(response={"instructions": "Greet the user in one sentence."})
        audio = await reply(conn)
        if args.question:
            pcm = read_pcm24k(args.question)
            for i in range(0, len(pcm), CHUNK):  # 40 ms appends, as a microphone sends them
                await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + CHUNK]).decode())
            audio = await reply(conn)  # the server VAD ends the turn and answers
        write_pcm24k(args.out, audio)
        print(f"audio of the last answer: {args.out}")


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, "ws://127.0.0.1:8080/v1")))
