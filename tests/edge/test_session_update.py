"""``session.update`` -> the session's state and the ``session.updated`` a client reads back, and
its errors (each an ``error`` event that leaves the settings as they were, field by field).

Fast tier: ``edge.testing`` stand-ins, no model (nothing here reaches the VAD, router or voice).
"""

from __future__ import annotations

from typing import Any

import pytest

from edge.testing import SessionHarness, memory_services


def update(**session: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", **session}}


async def test_session_created_then_updated_with_what_was_asked() -> None:
    async with SessionHarness(memory_services()) as edge:
        created = edge.sent[0]
        assert created["type"] == "session.created"
        assert created["session"]["id"] == edge.state.id
        td = created["session"]["audio"]["input"]["turn_detection"]
        assert td == {
            "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500,
            "create_response": True, "interrupt_response": True,
        }  # fmt: skip
        await edge.send(
            update(
                instructions="Be brief.",
                max_output_tokens=50,
                audio={
                    "output": {"voice": "af_heart", "format": {"type": "audio/pcm", "rate": 24000}},
                    "input": {
                        "turn_detection": {"type": "server_vad", "threshold": 0.7, "silence_duration_ms": 200}
                    },
                },
            )
        )
        updated = edge.sent[-1]
        assert updated["type"] == "session.updated"
        session = updated["session"]
        assert session["instructions"] == "Be brief." and session["max_output_tokens"] == 50
        assert session["audio"]["output"]["voice"] == "af_heart"
        td = session["audio"]["input"]["turn_detection"]
        assert (td["threshold"], td["silence_duration_ms"], td["prefix_padding_ms"]) == (0.7, 200, 300)
        state = edge.state
        assert (state.instructions, state.voice, state.max_output_tokens) == ("Be brief.", "af_heart", 50)
        assert edge.session.turns.audio.detector is not None
        assert edge.session.turns.audio.detector.config == state.turn_detection
        saved = await edge.services.sessions.load(state.id)
        assert saved == state


async def test_turn_detection_off_and_back_on_keeps_unset_fields() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send(update(audio={"input": {"turn_detection": None}}))
        assert edge.sent[-1]["session"]["audio"]["input"]["turn_detection"] is None
        assert edge.state.turn_detection is None and edge.session.turns.audio.detector is None
        # semantic_vad is served by the same VAD; fields it does not carry come from the defaults.
        await edge.send(
            update(audio={"input": {"turn_detection": {"type": "semantic_vad", "create_response": False}}})
        )
        td = edge.state.turn_detection
        assert td is not None and td.create_response is False and td.threshold == 0.5
        assert edge.session.turns.audio.detector is not None
        # An update that does not mention turn_detection leaves it alone.
        await edge.send(update(instructions="x"))
        assert edge.state.turn_detection == td


@pytest.mark.parametrize(
    ("session", "code"),
    [
        ({"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 1.5}}}}, "invalid_value"),
        (
            {"audio": {"input": {"turn_detection": {"type": "server_vad", "silence_duration_ms": 10}}}},
            "invalid_value",
        ),
        ({"audio": {"input": {"format": {"type": "audio/pcmu"}}}}, "unsupported_audio_format"),
        ({"audio": {"output": {"format": {"type": "audio/pcma"}}}}, "unsupported_audio_format"),
    ],
)
async def test_bad_settings_are_refused_and_leave_the_session_as_it_was(
    session: dict[str, Any], code: str
) -> None:
    async with SessionHarness(memory_services()) as edge:
        before = edge.state.turn_detection
        await edge.send(
            {"type": "session.update", "event_id": "evt_1", "session": {"type": "realtime", **session}}
        )
        error = edge.sent[-1]
        assert error["type"] == "error"
        assert error["error"]["code"] == code and error["error"]["event_id"] == "evt_1"
        assert edge.state.turn_detection == before
        assert not edge.of_type("session.updated")


async def test_transcription_sessions_are_not_served() -> None:
    async with SessionHarness(memory_services()) as edge:
        await edge.send({"type": "session.update", "session": {"type": "transcription"}})
        assert edge.sent[-1]["error"]["code"] == "unsupported_session_type"
