"""Every kind of bad input gets an ``error`` event; the connection, other turns and the node carry on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.fixtures.region import RunningRegion
from wire.client import RegionConnection, collect_turn, run_turn, turns_url
from wire.turn import Message, TurnStart, encode

SECOND = b"\x00\x00" * 16_000
N = len(SECOND)
BAD_FIELD = json.dumps({"type": "turn.start", "turn_id": "x", "history": "hi"})


def start(turn_id: str, **fields: Any) -> str:
    return encode(TurnStart(turn_id=turn_id, **fields))


# (name, frames to send, expected error code)
CASES: list[tuple[str, list[str | bytes], str]] = [
    ("malformed JSON", ['{"type": "turn.start", "turn_id": '], "invalid_event"),
    ("unknown type", [json.dumps({"type": "turn.launch", "turn_id": "x"})], "invalid_event"),
    ("missing turn_id", [json.dumps({"type": "turn.start"})], "invalid_event"),
    (
        "wrong field type",
        [BAD_FIELD],
        "invalid_event",
    ),
    (
        "wrong audio format",
        [start("fmt", audio_bytes=N, audio_format="opus"), SECOND],
        "invalid_audio",
    ),
    (
        "wrong sample rate",
        [start("rate", audio_bytes=N, sample_rate=8000), SECOND],
        "invalid_audio",
    ),
    ("odd byte count", [start("odd", audio_bytes=3), b"\x00\x01\x02"], "invalid_audio"),
    ("empty audio", [start("empty")], "invalid_audio"),
    ("empty audio frame", [start("empty-frame", audio_bytes=2), b""], "invalid_audio"),
    ("size differs from announced", [start("size", audio_bytes=N), SECOND[:1000]], "invalid_audio"),
    ("audio too long", [start("long", audio_bytes=31 * N), 31 * SECOND], "invalid_audio"),
    ("unknown voice", [start("voice", text="Hi.", voice="af_nobody")], "unknown_voice"),
    (
        "history too long (messages)",
        [start("hist", text="Hi.", history=[Message(role="user", content="x")] * 65)],
        "history_too_long",
    ),
    (
        "history too long (characters)",
        [start("hist-chars", text="Hi.", history=[Message(role="user", content="x" * 33_000)])],
        "history_too_long",
    ),
    ("text too long", [start("text", text="word " * 1000)], "text_too_long"),
    ("audio without turn.start", [SECOND], "invalid_event"),
]


async def _next_error(ws: ClientConnection) -> dict[str, Any]:
    msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
    assert msg["type"] == "error", msg
    return msg  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "frames", "code"), CASES, ids=[c[0] for c in CASES])
async def test_bad_input_gets_an_error_and_the_connection_stays_usable(
    region: RunningRegion, name: str, frames: list[str | bytes], code: str
) -> None:
    async with connect(turns_url(region.url), max_size=2**24) as ws:
        for frame in frames:
            await ws.send(frame)
        err = await _next_error(ws)
        assert err["code"] == code, err
        assert err["message"], "an error must say what was wrong"
        # The same connection then serves a proper turn, with no stray event left from the bad one.
        await ws.send(start("after", text="Say yes.", max_output_tokens=5))
        kinds: list[str] = []
        while not kinds or kinds[-1] not in ("turn.done", "error"):
            frame = await asyncio.wait_for(ws.recv(), timeout=60)
            kinds.append("audio" if isinstance(frame, bytes) else json.loads(frame)["type"])
        assert kinds[0] == "turn.admitted" and kinds[-1] == "turn.done", kinds
    async with httpx.AsyncClient() as http:
        health = await http.get(f"{region.url}/health")
    assert health.status_code == 200 and health.json()["status"] == "ready"


async def test_bad_input_does_not_disturb_a_turn_on_another_connection(region: RunningRegion) -> None:
    good = asyncio.create_task(
        run_turn(region.url, TurnStart(turn_id="good", text="Name a colour.", max_output_tokens=20))
    )
    async with connect(turns_url(region.url), max_size=2**24) as ws:
        for _, frames, code in CASES:
            for frame in frames:
                await ws.send(frame)
            assert (await _next_error(ws))["code"] == code
    result = await good
    assert result.status == "completed" and result.audio and result.error is None


async def test_a_second_turn_start_while_one_runs_is_refused(region: RunningRegion) -> None:
    conn = await RegionConnection.open(region.url, region=region.id)
    try:
        await conn.start(TurnStart(turn_id="one", text="Count to five.", max_output_tokens=30))
        await conn.start(TurnStart(turn_id="two", text="Hi."))
        seen = [ev async for ev in conn.events()]
        errors = [ev for ev in seen if getattr(ev, "code", None) == "turn_in_progress"]
        assert errors and errors[0].turn_id == "two"  # type: ignore[union-attr]
    finally:
        await conn.close()
    # a fresh turn on a fresh connection still works
    conn = await RegionConnection.open(region.url)
    try:
        result = await collect_turn(conn, TurnStart(turn_id="three", text="Hi.", max_output_tokens=10))
        assert result.status == "completed"
    finally:
        await conn.close()
