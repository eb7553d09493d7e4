"""Every kind of bad input gets an ``error`` event on a real region (over a real socket); the
connection, other turns and the node carry on. The same cases on stand-in models, without the
socket: ``test_session_turns.py``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.fixtures.region import RunningRegion
from tests.region.helpers import BAD_INPUT as CASES
from tests.region.helpers import start
from wire.client import RegionConnection, collect_turn, run_turn, turns_url
from wire.turn import TurnStart


async def _next_error(ws: ClientConnection) -> dict[str, Any]:
    msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=10))
    assert msg["type"] == "error", msg
    return msg  # type: ignore[no-any-return]


@pytest.mark.parametrize(("name", "frames", "code"), CASES, ids=[c[0] for c in CASES])
async def test_bad_input_gets_an_error_and_the_connection_stays_usable(
    region: RunningRegion, name: str, frames: list[str | bytes], code: str
) -> None:
    async with connect(turns_url(region.url), max_size=2**24, additional_headers=region.headers()) as ws:
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
    async with connect(turns_url(region.url), max_size=2**24, additional_headers=region.headers()) as ws:
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
