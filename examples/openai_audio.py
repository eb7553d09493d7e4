"""The OpenAI audio API of a running voicemesh edge with the stock openai SDK: the models it serves,
speech streamed to a WAV as it is synthesised, and (given a recording) its transcript with timed
segments.

Run (with `voicemesh up` running; it prints the API key):

    espeak-ng -w question.wav "Please book a table for two."
    VOICEMESH_API_KEY=vm-... python examples/openai_audio.py question.wav speech.wav

`--url` defaults to http://127.0.0.1:8080/v1 (what `voicemesh up` serves).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from _common import parse_args
from openai import AsyncOpenAI


async def main(args: argparse.Namespace) -> None:
    client = AsyncOpenAI(api_key=args.key, base_url=args.url)

    # GET /v1/models
    models = await client.models.list()
    print("models:", ", ".join(m.id for m in models.data))

    # POST /v1/audio/speech, streamed: the first bytes arrive while later sentences are synthesised.
    async with client.audio.speech.with_streaming_response.create(
        model="tts-1",
        voice="alloy",
        input="Hello from voicemesh. This audio was streamed as it was synthesised.",
        response_format="wav",
    ) as response:
        served = response.headers.get("x-voicemesh-region") or response.headers.get("x-voicemesh-fallback")
        audio = b"".join([chunk async for chunk in response.iter_bytes()])  # (a player would play each)
    await asyncio.to_thread(Path(args.out).write_bytes, audio)
    print(f"speech: {args.out} (served by {served})")

    # POST /v1/audio/transcriptions
    if args.question:
        result = await client.audio.transcriptions.create(
            model="whisper-1", file=Path(args.question), response_format="verbose_json"
        )
        print(f"transcript: {result.text}")
        for s in result.segments or []:
            print(f"  [{s.start:5.2f} - {s.end:5.2f}] {s.text}")


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, "http://127.0.0.1:8080/v1")))
