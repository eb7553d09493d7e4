"""``session.update`` -> the session's state and the ``session.updated`` a client reads back, and
its errors (each an ``error`` event that leaves the settings as they were, field by field).

Fast tier: ``edge.testing`` stand-ins, no model (nothing here reaches the VAD, router or voice).
"""

from __future__ import annotations

from typing import Any

import msgspec
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
            "create_response": True, "interrupt_response": True, "voicemesh_backchannel": True,
        }  # fmt: skip
        await edge.send(
            update(
                instructions="Be brief.",
                max_output_tokens=50,
                audio={
                    "output": {"voice": "jf_nezumi", "format": {"type": "audio/pcm", "rate": 24000}},
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
        assert session["audio"]["output"]["voice"] == "jf_nezumi"
        td = session["audio"]["input"]["turn_detection"]
        assert (td["threshold"], td["silence_duration_ms"], td["prefix_padding_ms"]) == (0.7, 200, 300)
        state = edge.state
        assert (state.instructions, state.voice, state.max_output_tokens) == ("Be brief.", "jf_nezumi", 50)
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


def _vad(**fields: Any) -> dict[str, Any]:
    return {"audio": {"input": {"turn_detection": {"type": "server_vad", **fields}}}}


TD = "session.audio.input.turn_detection."


@pytest.mark.parametrize(
    ("session", "param"),
    [
        (_vad(prefix_padding_ms=10**9), TD + "prefix_padding_ms"),
        (_vad(prefix_padding_ms=-1), TD + "prefix_padding_ms"),
        (_vad(silence_duration_ms=10**12), TD + "silence_duration_ms"),
        (_vad(threshold=0.0), TD + "threshold"),
        (_vad(threshold=1.0), TD + "threshold"),
        (_vad(idle_timeout_ms=10**10), TD + "idle_timeout_ms"),
        ({"max_output_tokens": -5}, "session.max_output_tokens"),
        ({"max_output_tokens": 0}, "session.max_output_tokens"),
        ({"max_output_tokens": 2**31}, "session.max_output_tokens"),
        ({"instructions": "x" * 900_000}, "session.instructions"),
        ({"audio": {"output": {"voice": "v" * 10_000}}}, "session.audio.output.voice"),
        ({"audio": {"output": {"speed": 40.0}}}, "session.audio.output.speed"),
        (
            {"truncation": {"type": "retention_ratio", "retention_ratio": 7}},
            "session.truncation.retention_ratio",
        ),
    ],
)
async def test_out_of_bounds_settings_name_the_param_and_change_nothing(
    session: dict[str, Any], param: str
) -> None:
    """All or nothing: the good fields of a refused update are not applied either."""
    async with SessionHarness(memory_services()) as edge:
        snapshot = msgspec.json.encode(edge.state)
        await edge.send(
            {
                "type": "session.update",
                "event_id": "evt_b",
                "session": {"type": "realtime", "instructions": "changed", **session},
            }
        )
        error = edge.sent[-1]
        assert error["type"] == "error", error
        assert error["error"]["param"] == param and error["error"]["event_id"] == "evt_b"
        assert error["error"]["code"] in ("invalid_value", "text_too_long")
        assert msgspec.json.encode(edge.state) == snapshot
        assert not edge.of_type("session.updated")
        await edge.send(update(instructions="fine"))  # the session still works
        assert edge.sent[-1]["type"] == "session.updated"


@pytest.mark.parametrize("big", [2**63, 2**64, 2**64 + 1, -(2**64), 10**30])
async def test_huge_integers_anywhere_are_a_client_error(big: int) -> None:
    async with SessionHarness(memory_services()) as edge:
        for event, param in (
            (update(max_output_tokens=big), "session.max_output_tokens"),
            (update(**_vad(prefix_padding_ms=big)), TD + "prefix_padding_ms"),
            ({"type": "input_audio_buffer.clear", "junk": {"deep": [big]}}, "junk.deep.0"),
        ):
            await edge.send(event)
            error = edge.sent[-1]
            assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
            assert (error["error"]["code"], error["error"]["param"]) == ("invalid_value", param), error
        await edge.send(update(instructions="fine"))
        assert edge.sent[-1]["type"] == "session.updated"


async def test_inf_max_output_tokens_is_the_cap_and_bounds_are_inclusive() -> None:
    async with SessionHarness(memory_services()) as edge:
        cap = edge.services.settings.limits.content.max_output_tokens
        await edge.send(update(max_output_tokens="inf"))
        assert edge.sent[-1]["session"]["max_output_tokens"] == cap == edge.state.max_output_tokens
        await edge.send(update(max_output_tokens=1, **_vad(prefix_padding_ms=5_000, silence_duration_ms=32)))
        assert edge.sent[-1]["type"] == "session.updated"
        td = edge.state.turn_detection
        assert td is not None and (td.prefix_padding_ms, td.silence_duration_ms) == (5_000, 32)
        assert edge.state.max_output_tokens == 1


async def test_an_event_the_sdk_models_refuse_names_its_event_id_and_a_clean_param() -> None:
    async with SessionHarness(memory_services()) as edge:
        before = msgspec.structs.asdict(edge.state)
        await edge.send(
            {**update(audio={"input": {"format": {"type": "audio/g729"}}}), "event_id": "evt_format"}
        )
        error = edge.sent[-1]
        assert error["type"] == "error", error
        assert error["error"]["event_id"] == "evt_format"
        param = error["error"]["param"]
        assert param.startswith("session.audio.input.format"), param
        assert not any(part[:1].isupper() for part in param.split(".")), param  # no pydantic model names
        assert msgspec.structs.asdict(edge.state) == before
