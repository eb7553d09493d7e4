"""A greeting in an OpenAI voice, end to end: the stock ``openai`` Realtime client asks for ``marin``
(LiveKit's default) and sends LiveKit's ``generate_reply(instructions=...)`` with nothing pending;
a real region (Whisper, vLLM, Kokoro) speaks the greeting in the mapped Kokoro voice.
"""

from __future__ import annotations

from tests.edge.conftest import rms
from tests.fixtures.edge import RunningEdge
from voicemesh.realtime import Reply, client, collect_reply


async def test_a_greeting_in_an_openai_voice_is_spoken_by_the_region(edge: RunningEdge) -> None:
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        assert (await conn.recv()).type == "session.created"
        await conn.session.update(session={"type": "realtime", "audio": {"output": {"voice": "marin"}}})
        updated = await conn.recv()
        assert updated.type == "session.updated", updated
        assert updated.session.audio.output.voice == "marin"  # type: ignore[union-attr]
        await conn.response.create(
            event_id="response_create_greet",
            response={
                "instructions": "Greet the user warmly in one short sentence.",
                "metadata": {"client_event_id": "response_create_greet"},
                "max_output_tokens": 40,
            },
        )
        reply = await collect_reply(conn, Reply(), timeout_s=120)

    errors = [e for e in reply.events if e.type == "error"]
    assert not errors, errors
    assert reply.status == "completed", reply.types
    assert reply.metadata["client_event_id"] == "response_create_greet"
    assert reply.metadata.get("voicemesh_region") == "edge-test", reply.metadata
    assert "voicemesh_degraded" not in reply.metadata
    created = next(e for e in reply.events if e.type == "response.created")
    assert (created.response.metadata or {}).get("client_event_id") == "response_create_greet"
    assert reply.text.strip(), "the greeting has no transcript"
    assert len(reply.audio) > 0 and rms(bytes(reply.audio)) > 0.01, "the greeting was not spoken"
    done = reply.events[-1]
    assert done.type == "response.done" and done.response.usage is not None
    assert (done.response.usage.output_tokens or 0) > 0
    assert done.response.audio.output.voice == "marin"
