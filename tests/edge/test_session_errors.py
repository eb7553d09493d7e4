"""Bad client input gets an ``error`` event with a specific code (and the client's ``event_id``);
the session carries on. ``BAD_EVENTS`` is also sent over a real socket by ``test_bad_input.py``.

Fast tier: ``edge.testing`` stand-ins; no event here reaches a model.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any

from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import ScriptedRouter, SessionHarness, memory_services, spoken_reply
from router.api import RoutedEvent, SessionRouting
from wire.turn import TurnStart

STRICT = LimitSettings(events_per_s=5.0, events_burst=30, max_event_bytes=64_000, max_buffer_s=1.0)
"""The limits ``test_bad_input.strict_edge`` runs with."""


def _update(session: dict[str, Any]) -> str:
    return json.dumps({"type": "session.update", "session": {"type": "realtime", **session}})


def _append(audio: str) -> str:
    return json.dumps({"type": "input_audio_buffer.append", "audio": audio})


BAD_EVENTS: list[tuple[str, str]] = [
    ("this is not json", "invalid_json"),
    ("[1, 2, 3]", "invalid_json"),
    (json.dumps({"event_id": "e1"}), "missing_type"),
    (json.dumps({"type": "response.teleport"}), "unknown_event"),
    (json.dumps({"type": "input_audio_buffer.append"}), "invalid_value"),
    (_append("%%%not base64%%%"), "invalid_audio"),
    (_append(base64.b64encode(b"\x01\x02\x03").decode()), "invalid_audio"),
    (_append("A" * 70_000), "event_too_large"),
    (json.dumps({"type": "input_audio_buffer.commit"}), "input_audio_buffer_commit_empty"),
    (json.dumps({"type": "response.cancel"}), "response_cancel_not_active"),
    (json.dumps({"type": "response.create", "response": {"conversation": "conv_1"}}), "invalid_value"),
    (
        _update({"audio": {"input": {"turn_detection": {"type": "server_vad", "threshold": 7}}}}),
        "invalid_value",
    ),
    (_update({"audio": {"output": {"format": {"type": "audio/g729"}}}}), "invalid_value"),
    (
        json.dumps(
            {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": []}}
        ),
        "invalid_value",
    ),
    (json.dumps({"type": "conversation.item.delete", "item_id": "x"}), "item_delete_invalid_item_id"),
    (
        json.dumps(
            {
                "type": "conversation.item.create",
                "item": {
                    "type": "message",
                    "role": "system",
                    "content": [{"type": "input_text", "text": "x"}],
                },
            }
        ),
        "invalid_value",
    ),
    (_update({"max_output_tokens": 2**31}), "invalid_value"),
    (json.dumps({"type": "input_audio_buffer.clear", "event_id": "e", "n": 2**64}), "invalid_value"),
]


def _strict() -> SessionHarness:
    return SessionHarness(memory_services(settings=EdgeSettings(limits=STRICT)))


async def test_each_bad_event_gets_its_error_and_the_session_carries_on() -> None:
    async with _strict() as edge:
        for raw, code in BAD_EVENTS:
            before = len(edge.sent)
            await edge.send(raw)
            assert [e["type"] for e in edge.sent[before:]] == ["error"], raw[:60]
            error = edge.sent[-1]["error"]
            assert error["code"] == code and error["message"], (raw[:60], error)
        await edge.send(b"\x00\x01")  # binary frames are not Realtime events either
        assert edge.sent[-1]["error"]["code"] == "invalid_json"
        await edge.send(
            {
                "type": "conversation.item.create",
                "event_id": "evt_x",
                "item": {"type": "mcp_list_tools", "server_label": "x", "tools": []},
            }
        )
        assert (edge.sent[-1]["error"]["code"], edge.sent[-1]["error"]["event_id"]) == (
            "unsupported_item",
            "evt_x",
        )
        await edge.send({"type": "input_audio_buffer.clear"})
        assert edge.sent[-1]["type"] == "input_audio_buffer.cleared"


async def test_manual_buffer_is_bounded() -> None:
    async with _strict() as edge:
        await edge.send(_update({"audio": {"input": {"turn_detection": None}}}))
        chunk = base64.b64encode(bytes(24_000)).decode()  # 0.5 s of 24 kHz PCM16
        for _ in range(3):
            await edge.send({"type": "input_audio_buffer.append", "audio": chunk, "event_id": "evt_full"})
        error = edge.of_type("error")
        assert [(e["error"]["code"], e["error"]["event_id"]) for e in error] == [
            ("input_audio_buffer_full", "evt_full")
        ]
        await edge.send({"type": "input_audio_buffer.commit"})
        assert edge.of_type("input_audio_buffer.committed")  # what fitted is still there


async def test_event_rate_limit() -> None:
    async with _strict() as edge:
        for _ in range(40):  # burst is 30
            await edge.send({"type": "input_audio_buffer.clear"})
        codes = [e["error"]["code"] for e in edge.of_type("error")]
        assert codes and set(codes) == {"rate_limit_exceeded"}
        assert len(edge.of_type("input_audio_buffer.cleared")) >= 30


async def test_one_response_at_a_time() -> None:
    async with SessionHarness(memory_services(ScriptedRouter(spoken_reply("One.")))) as edge:
        await edge.say("Hi")
        await edge.send({"type": "response.create"})
        await edge.send({"type": "response.create", "event_id": "evt_again"})
        error = edge.sent[-1]["error"]
        assert (error["code"], error["event_id"]) == ("conversation_already_has_active_response", "evt_again")
        await edge.wait_for("response.done")
        assert len(edge.of_type("response.created")) == 1


class BrokenRouter(ScriptedRouter):
    """A router with a bug (stands in for any unexpected exception while handling an event)."""

    def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncIterator[RoutedEvent]:
        raise RuntimeError("bug")


async def test_a_bug_costs_one_event_not_the_session() -> None:
    async with SessionHarness(memory_services(BrokenRouter([]))) as edge:
        await edge.say("Hi")
        await edge.send({"type": "response.create", "event_id": "evt_bug"})
        error = edge.sent[-1]["error"]
        assert (error["code"], error["event_id"]) == ("server_error", "evt_bug")
        assert "RuntimeError" in error["message"]
        await edge.send(_update({"instructions": "still here"}))
        assert edge.sent[-1]["type"] == "session.updated"
