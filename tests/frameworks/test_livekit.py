"""LiveKit Agents 1.8's stock OpenAI realtime model (livekit-plugins-openai) against a real edge
and region, driven without a LiveKit room: audio pushed into ``model.session()``, replies read
from its generations' message streams, as ``AgentSession`` reads them.

The plugin's defaults stay as they are: voice ``marin``, ``semantic_vad`` turn detection,
``max_output_tokens: "inf"``, input transcription on, and ``generate_reply`` matching its reply
by ``response.metadata.client_event_id`` (it gives up after 10 s without ``response.created``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tests.fixtures.edge import RunningEdge

from .conftest import (
    LONG_ANSWER,
    QUESTION,
    SECOND_QUESTION,
    TURN_TIMEOUT_S,
    LiveKitSession,
    finished_generations,
    livekit_session,
)


def _no_errors(lk: LiveKitSession) -> None:
    assert lk.errors == [], lk.errors
    assert lk.server_events("error") == [], lk.server_events("error")


async def _generation_done(lk: LiveKitSession, count: int = 1) -> dict[str, object]:
    await lk.wait_for_event("response.done", count)
    await lk.events.wait_for(lambda _: len(finished_generations(lk)) >= count or bool(lk.errors))
    assert not lk.errors, lk.errors
    return finished_generations(lk)[count - 1]


async def test_spoken_turn_with_plugin_defaults(
    edge: RunningEdge, question_pcm: Callable[[str], bytes]
) -> None:
    async with livekit_session(edge.http_url, edge.api_key) as lk:
        await lk.speak(question_pcm(QUESTION))
        reply = await _generation_done(lk)
        _no_errors(lk)
        updated = lk.server_events("session.updated")[-1]["session"]
        assert updated["audio"]["output"]["voice"] == "marin"
        # "inf" is accepted (no error); the edge echoes the cap it stands for (OpenAI echoes "inf").
        assert updated["max_output_tokens"] in (
            "inf",
            edge.services.settings.limits.content.max_output_tokens,
        )
        # semantic_vad is accepted and served by the edge's Silero VAD (echoed as server_vad).
        assert updated["audio"]["input"]["turn_detection"]["type"] in ("semantic_vad", "server_vad")
        assert reply["text"] and reply["audio"], reply
        done = lk.server_events("response.done")[0]["response"]
        assert done["status"] == "completed"
        assert "voicemesh_degraded" not in (done.get("metadata") or {})
        assert done.get("usage"), done
        transcripts = lk.server_events("conversation.item.input_audio_transcription.completed")
        assert transcripts and "capital" in transcripts[0]["transcript"].lower(), transcripts


async def test_barge_in_then_second_turn(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    """What ``AgentSession`` does when the user speaks over the answer: ``interrupt()`` (a
    ``response.cancel``), then ``truncate()`` the assistant item to what was played."""
    async with livekit_session(edge.http_url, edge.api_key) as lk:
        await lk.speak(question_pcm(LONG_ANSWER))
        await lk.wait_for_event("response.output_audio.delta")
        await lk.events.wait_for(lambda _: bool(lk.generations) and len(lk.generations[0]["audio"]) > 0)
        first = lk.generations[0]
        played_ms = max(1, len(first["audio"]) // 2 * 1000 // 24_000)
        lk.session.interrupt()
        lk.session.truncate(message_id=first["message_id"], modalities=["audio"], audio_end_ms=played_ms)
        await lk.wait_for_event("conversation.item.truncated")
        await lk.speak(question_pcm(SECOND_QUESTION))
        # The second answer, spoken: its words and audio arrive. It is not waited out: under the
        # plugin's max_output_tokens "inf" SmolLM2 may talk for minutes of Kokoro time.
        await lk.events.wait_for(
            lambda _: (
                len(lk.generations) >= 2
                and bool(lk.generations[1]["text"])
                and bool(lk.generations[1]["audio"])
            )
        )
        second = lk.generations[1]
        _no_errors(lk)
        assert lk.server_events("response.done")[0]["response"]["status"] == "cancelled"
        assert second["text"] and second["audio"], second


async def test_greeting(edge: RunningEdge) -> None:
    """LiveKit's quickstart opening: ``generate_reply(instructions=...)`` with nothing said yet."""
    async with livekit_session(edge.http_url, edge.api_key) as lk:
        async with asyncio.timeout(TURN_TIMEOUT_S):
            created = await lk.session.generate_reply(instructions="Greet the user in one short sentence.")
        assert created.user_initiated  # matched by response.metadata.client_event_id
        reply = await _generation_done(lk)
        _no_errors(lk)
        assert reply["text"] and reply["audio"], reply
        done = lk.server_events("response.done")[0]["response"]
        assert done["metadata"]["client_event_id"].startswith("response_create_")


async def test_text_only_turn(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    async with livekit_session(edge.http_url, edge.api_key, modalities=["text"]) as lk:
        await lk.speak(question_pcm(QUESTION))
        reply = await _generation_done(lk)
        _no_errors(lk)
        assert reply["text"] and not reply["audio"], reply
        assert reply["modalities"] == ["text"]
        assert lk.server_events("response.output_text.delta")
        assert lk.server_events("response.output_audio.delta") == []


async def test_openai_voice_name(edge: RunningEdge, question_pcm: Callable[[str], bytes]) -> None:
    async with livekit_session(edge.http_url, edge.api_key, voice="alloy") as lk:
        await lk.speak(question_pcm(QUESTION))
        reply = await _generation_done(lk)
        _no_errors(lk)
        assert lk.server_events("session.updated")[-1]["session"]["audio"]["output"]["voice"] == "alloy"
        assert reply["text"] and reply["audio"], reply
        assert "voicemesh_degraded" not in (
            lk.server_events("response.done")[0]["response"].get("metadata") or {}
        )
