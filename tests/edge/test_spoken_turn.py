"""A whole spoken turn through the edge with the stock ``openai`` Realtime client, against a real region."""

from __future__ import annotations

import base64
from collections.abc import Callable

import numpy as np
import pydantic

from edge.shared.events import SERVER_EVENT_MODELS
from tests.edge.conftest import rms, session_id
from tests.fixtures.edge import RunningEdge
from voicemesh.realtime import Reply, client, collect_reply, stream_audio
from wire.audio import CLIENT_RATE, FloatAudio


def _strictly_valid(event: object) -> None:
    """The stock client parses loosely; re-validate each SDK-typed event against its model."""
    model = SERVER_EVENT_MODELS.get(event.type)  # type: ignore[attr-defined]
    if model is not None:
        try:
            model.model_validate(event.model_dump(exclude_unset=True))  # type: ignore[attr-defined]
        except pydantic.ValidationError as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{event.type} does not match the SDK model: {exc}") from exc  # type: ignore[attr-defined]


async def test_spoken_question_gets_spoken_answer(
    edge: RunningEdge, say: Callable[[str], FloatAudio]
) -> None:
    question = say("What is the capital of France?")
    async with client(edge.url, edge.api_key).realtime.connect(model="voicemesh") as conn:
        created = await conn.recv()
        assert created.type == "session.created"
        sid = session_id(created)
        await conn.session.update(
            session={"type": "realtime", "instructions": "Answer in one short sentence."}
        )
        updated = await conn.recv()
        assert updated.type == "session.updated"
        assert updated.session.instructions == "Answer in one short sentence."  # type: ignore[union-attr]
        silence = np.zeros(CLIENT_RATE, dtype=np.float32)
        await stream_audio(conn, np.concatenate([question, silence]), pace=1.5)
        reply = await collect_reply(conn, Reply(), timeout_s=90)
        state = await edge.saved_state(sid, messages=2)

    for event in reply.events:
        _strictly_valid(event)
    types = reply.types
    assert "error" not in types, [e for e in reply.events if e.type == "error"]
    order = [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "response.created",
        "response.output_audio.delta",  # a clause's words go out once its audio has (edge/turns/heard.py)
        "response.output_audio_transcript.delta",
        "response.output_audio.done",
        "response.done",
    ]
    positions = [types.index(t) for t in order]
    assert positions == sorted(positions), types
    # The serving region is announced before its audio (drills and the talk page rely on it).
    routed = [e for e in reply.events if e.type == "voicemesh.turn.routed"]
    assert routed and routed[0].region == "edge-test", types  # type: ignore[attr-defined]
    assert types.index("voicemesh.turn.routed") < types.index("response.output_audio.delta")
    assert "conversation.item.input_audio_transcription.completed" in types
    assert "capital" in reply.transcript.lower(), reply.transcript  # Whisper base may mishear "France"
    assert reply.text.strip(), "no transcript deltas of the answer"
    assert reply.status == "completed"
    assert reply.metadata.get("voicemesh_region") == "edge-test"
    assert "voicemesh_degraded" not in reply.metadata

    # 24 kHz PCM16: an even byte count, a plausible duration for a sentence, and not silence.
    assert len(reply.audio) % 2 == 0
    seconds = len(reply.audio) / 2 / CLIENT_RATE
    assert 0.5 < seconds < 30, seconds
    assert rms(bytes(reply.audio)) > 0.01
    first = next(e for e in reply.events if e.type == "response.output_audio.delta")
    assert len(base64.b64decode(first.delta)) <= 4800

    # The conversation lives at the edge: both sides of the turn are in the session's history.
    assert state is not None
    assert [m.role for m in state.history][-2:] == ["user", "assistant"]
    assert state.history[-1].content == reply.text.strip()
