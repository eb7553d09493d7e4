"""Function calling with the stock openai SDK against a running voicemesh edge: a weather tool, a
spoken (or typed) question answered with a call, the call run here, its output fed back, and the
spoken answer written to a WAV.

Run (with `voicemesh up` running; it prints the API key):

    espeak-ng -w question.wav "What is the weather in Paris?"
    VOICEMESH_API_KEY=vm-... python examples/openai_sdk_tools.py question.wav answer.wav

Without a WAV the question is typed. The cpu profile's SmolLM2 calls functions only when told to,
so the session names the function (`tool_choice`); the answer after the output asks for none.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from typing import Any

from _common import CHUNK, parse_args, read_pcm24k, write_pcm24k
from openai import AsyncOpenAI
from openai.resources.realtime.realtime import AsyncRealtimeConnection

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
        "required": ["city"],
    },
}


def get_weather(city: str) -> dict[str, Any]:
    """Stands in for a weather service."""
    return {"city": city, "sky": "sunny", "temperature_c": 24}


async def response(conn: AsyncRealtimeConnection) -> tuple[list[Any], bytes]:
    """Read one response: its function calls and its audio."""
    calls, audio = [], bytearray()
    async for event in conn:
        if event.type == "response.output_audio_transcript.delta":
            print(event.delta, end="", flush=True)
        elif event.type == "response.output_audio.delta":
            audio += base64.b64decode(event.delta)
        elif event.type == "response.function_call_arguments.done":
            print(f"[call {event.name}({event.arguments}) id {event.call_id}]")
            calls.append(event)
        elif event.type == "error":
            print(f"\nerror: {event.error.message}")
        elif event.type == "response.done":
            print(f"\n[{event.response.status}]")
            return calls, bytes(audio)
    return calls, bytes(audio)


async def main(args: argparse.Namespace) -> None:
    client = AsyncOpenAI(api_key=args.key, websocket_base_url=args.url)
    async with client.realtime.connect(model="voicemesh") as conn:
        await conn.session.update(
            session={
                "type": "realtime",
                "instructions": "You are a weather assistant. Answer in one short sentence.",
                "tools": [WEATHER_TOOL],
                "tool_choice": {"type": "function", "name": "get_weather"},
            }
        )
        if args.question:
            pcm = read_pcm24k(args.question)
            for i in range(0, len(pcm), CHUNK):  # 40 ms appends; the server VAD ends the turn
                await conn.input_audio_buffer.append(audio=base64.b64encode(pcm[i : i + CHUNK]).decode())
        else:
            text = "What is the weather in Paris?"
            content = [{"type": "input_text", "text": text}]
            await conn.conversation.item.create(item={"type": "message", "role": "user", "content": content})
            await conn.response.create()
        calls, audio = await response(conn)
        for call in calls:
            output = get_weather(**json.loads(call.arguments))
            item = {"type": "function_call_output", "call_id": call.call_id, "output": json.dumps(output)}
            await conn.conversation.item.create(item=item)  # type: ignore[arg-type]
        if calls:
            print("assistant: ", end="")
            await conn.response.create(response={"tool_choice": "none"})
            _, audio = await response(conn)
        write_pcm24k(args.out, audio)
        print(f"audio of the answer: {args.out}")


if __name__ == "__main__":
    asyncio.run(main(parse_args(__doc__, "ws://127.0.0.1:8080/v1")))
