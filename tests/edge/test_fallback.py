"""With no region reachable, the client still hears an answer: Piper at the edge, marked degraded."""

from __future__ import annotations

from collections.abc import Callable

from edge.talk import talk
from tests.edge.conftest import rms
from tests.fixtures.edge import RunningEdge
from wire.audio import CLIENT_RATE, FloatAudio


async def test_no_region_reachable_gets_piper_audio_marked_degraded(
    lonely_edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    reply = await talk(lonely_edge.url, lonely_edge.api_key, say("Hello, are you there?"), pace=2.0, timeout_s=60)
    assert "error" not in reply.types
    assert reply.status == "completed"
    assert reply.metadata["voicemesh_degraded"] == "true"
    assert reply.metadata["served_by"] == "edge"
    assert "voicemesh_region" not in reply.metadata
    assert reply.text == "Sorry, no region can answer right now."
    seconds = len(reply.audio) / 2 / CLIENT_RATE
    assert 1.0 < seconds < 6.0, seconds  # Piper saying the hold message, resampled to 24 kHz
    assert rms(bytes(reply.audio)) > 0.01
    assert reply.first_audio_s is not None and reply.first_audio_s < 5.0


async def test_text_turn_degrades_too(lonely_edge: RunningEdge) -> None:
    """A typed message (conversation.item.create + response.create) degrades the same way."""
    from edge.talk import Reply, client, collect_reply

    async with client(lonely_edge.url, lonely_edge.api_key).realtime.connect(model="voicemesh") as conn:
        await conn.recv()
        await conn.conversation.item.create(
            item={"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi there"}]}
        )
        await conn.response.create()
        reply = await collect_reply(conn, Reply(), timeout_s=60)
    assert reply.types[:2] == ["conversation.item.added", "conversation.item.done"]
    assert reply.metadata["voicemesh_degraded"] == "true"
    assert len(reply.audio) > CLIENT_RATE  # more than half a second of speech
