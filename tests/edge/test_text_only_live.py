"""A text-only turn (``output_modalities: ["text"]``) with the stock ``openai`` Realtime client,
through a real edge and a real region (Whisper -> vLLM -> Kokoro): text events and no audio."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.fixtures.edge import RunningEdge
from voicemesh.realtime import client


async def test_a_text_only_turn_gets_output_text_and_no_audio(edge: RunningEdge) -> None:
    events: list[Any] = []
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        await conn.session.update(
            session={
                "type": "realtime",
                "output_modalities": ["text"],
                "instructions": "Answer in one short sentence.",
            }
        )
        await conn.conversation.item.create(
            item={
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "What is the capital of France?"}],
            }
        )
        await conn.response.create()
        async with asyncio.timeout(120):
            async for event in conn:
                events.append(event)
                if event.type == "response.done":
                    break

    types = [e.type for e in events]
    assert "error" not in types, [e for e in events if e.type == "error"]
    assert not [t for t in types if t.startswith("response.output_audio")], types
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text.strip(), types
    (done_text,) = [e.text for e in events if e.type == "response.output_text.done"]
    assert done_text == text.strip()
    part = next(e for e in events if e.type == "response.content_part.added").part
    assert part.type == "text"
    response = events[-1].response
    assert response.status == "completed" and response.output_modalities == ["text"]
    assert response.output[0].content[0].type == "output_text"
    assert "voicemesh_degraded" not in (response.metadata or {})
