"""Input audio transcription with the stock ``openai`` Realtime client, through a real edge and a
real region (Whisper): a spoken turn with ``create_response: false`` still gets its words."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from tests.fixtures.edge import RunningEdge
from voicemesh.realtime import client, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio


async def test_a_spoken_turn_without_a_response_gets_its_transcription(
    edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    question = say("What is the capital of France?")
    events: list[Any] = []
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        await conn.session.update(
            session={
                "type": "realtime",
                "audio": {
                    "input": {
                        "transcription": {"model": "gpt-4o-transcribe"},
                        "turn_detection": {"type": "server_vad", "create_response": False},
                    }
                },
            }
        )
        silence = np.zeros(CLIENT_RATE, dtype=np.float32)
        await stream_audio(conn, np.concatenate([question, silence]), pace=1.5)
        async with asyncio.timeout(120):
            async for event in conn:
                events.append(event)
                if event.type.startswith("conversation.item.input_audio_transcription.") and (
                    event.type.endswith((".completed", ".failed"))
                ):
                    break

    types = [e.type for e in events]
    assert "error" not in types, [e for e in events if e.type == "error"]
    updated = next(e for e in events if e.type == "session.updated")
    assert updated.session.audio.input.transcription.model == "gpt-4o-transcribe"
    committed = next(e for e in events if e.type == "input_audio_buffer.committed")
    completed = events[-1]
    assert completed.type == "conversation.item.input_audio_transcription.completed", types
    assert completed.item_id == committed.item_id
    assert "capital" in completed.transcript.lower(), completed.transcript
    assert "response.created" not in types  # create_response off: nothing answered
