"""Every bad input and unauthenticated connection gets a clear answer; nothing else is harmed."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import replace
from typing import Any

import httpx
import jwt
import pytest
import pytest_asyncio
import websockets
from websockets.asyncio.client import connect
from websockets.typing import Subprotocol

from edge.shared.settings import LimitSettings
from tests.edge.test_session_errors import BAD_EVENTS, STRICT
from tests.fixtures.common import free_port
from tests.fixtures.edge import EdgeFactory, RunningEdge
from voicemesh.realtime import client

JWT_SECRET = "test-jwt-secret-0123456789abcdef0123"
ADMIN_KEY = "test-admin-key-0123456789"


@pytest_asyncio.fixture(scope="session")
async def strict_edge(edge_factory: EdgeFactory) -> RunningEdge:
    """Small limits, so each one can be hit quickly; no region (nothing here needs one)."""
    return await edge_factory(
        [("nowhere", f"http://127.0.0.1:{free_port()}")],
        jwt_secret=JWT_SECRET,
        admin_keys=(ADMIN_KEY,),
        limits=replace(STRICT, max_sessions_per_key=2, connect_rate_per_s=0.5, connect_burst=40),
        keep=True,
    )


async def _raw(
    edge: RunningEdge, token: str | None = None, subprotocols: list[Subprotocol] | None = None
) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return await connect(
        f"{edge.url}/realtime?model=x", additional_headers=headers, subprotocols=subprotocols
    )


async def _next(ws: Any, type_: str | None = None) -> dict[str, Any]:
    async with asyncio.timeout(10):
        while True:
            event: dict[str, Any] = json.loads(await ws.recv())
            if type_ is None or event["type"] == type_:
                return event


# -- authentication ----------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "wrong-key", "ek_never-minted", "a.b.c"])
async def test_unauthenticated_handshake_is_refused_with_401(
    strict_edge: RunningEdge, token: str | None
) -> None:
    with pytest.raises(websockets.InvalidStatus) as info:
        await _raw(strict_edge, token)
    assert info.value.response.status_code == 401
    body = json.loads(info.value.response.body or b"{}")
    assert body["error"]["code"] == "invalid_api_key"


async def test_expired_jwt_is_refused_and_valid_jwt_accepted(strict_edge: RunningEdge) -> None:
    expired = jwt.encode({"sub": "alice", "exp": int(time.time()) - 10}, JWT_SECRET, algorithm="HS256")
    with pytest.raises(websockets.InvalidStatus) as info:
        await _raw(strict_edge, expired)
    assert info.value.response.status_code == 401
    assert b"expired" in (info.value.response.body or b"")
    forged = jwt.encode(
        {"sub": "alice", "exp": int(time.time()) + 60}, "another-secret-0123456789abcdef-x", algorithm="HS256"
    )
    with pytest.raises(websockets.InvalidStatus):
        await _raw(strict_edge, forged)
    valid = jwt.encode({"sub": "alice", "exp": int(time.time()) + 60}, JWT_SECRET, algorithm="HS256")
    ws = await _raw(strict_edge, valid)
    assert (await _next(ws))["type"] == "session.created"
    await ws.close()


async def test_browser_subprotocol_key_is_accepted(strict_edge: RunningEdge) -> None:
    ws = await _raw(
        strict_edge,
        None,
        [Subprotocol("realtime"), Subprotocol(f"openai-insecure-api-key.{strict_edge.api_key}")],
    )
    assert ws.subprotocol == "realtime"
    assert (await _next(ws))["type"] == "session.created"
    await ws.close()


async def test_client_secret_minted_from_key_works_at_handshake(strict_edge: RunningEdge) -> None:
    async with httpx.AsyncClient(base_url=strict_edge.http_url) as http:
        refused = await http.post("/v1/realtime/client_secrets", json={})
        assert refused.status_code == 401
        bad = await http.post(
            "/v1/realtime/client_secrets", json={"expires_after": {"anchor": "created_at", "seconds": 1}},
            headers={"Authorization": f"Bearer {strict_edge.api_key}"},
        )  # fmt: skip
        assert bad.status_code == 400
        minted = await http.post(
            "/v1/realtime/client_secrets", json={"expires_after": {"anchor": "created_at", "seconds": 60}},
            headers={"Authorization": f"Bearer {strict_edge.api_key}"},
        )  # fmt: skip
        assert minted.status_code == 200
        secret = minted.json()
        assert secret["value"].startswith("ek_") and secret["expires_at"] > time.time() + 50
        # A client secret cannot mint more secrets: only the API key can (authenticated, not allowed).
        again = await http.post(
            "/v1/realtime/client_secrets", json={}, headers={"Authorization": f"Bearer {secret['value']}"}
        )
        assert again.status_code == 403
    # The stock client with the ephemeral key, as a browser app would get it from its backend.
    async with client(strict_edge.url, secret["value"]).realtime.connect(model="x") as conn:
        assert (await conn.recv()).type == "session.created"


async def test_status_needs_auth_and_reports_router(strict_edge: RunningEdge) -> None:
    async with httpx.AsyncClient(base_url=strict_edge.http_url) as http:
        assert (await http.get("/status")).status_code == 401
        # The ops data needs the admin scope: an ordinary key is authenticated but not allowed.
        user = await http.get("/status", headers={"Authorization": f"Bearer {strict_edge.api_key}"})
        assert user.status_code == 403
        ok = await http.get("/status", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        assert ok.status_code == 200
        body = ok.json()
        assert "router" in body and "edge" in body
        assert (await http.get("/health")).json() == {"status": "ok"}


# -- limits ------------------------------------------------------------------------------------------


async def test_concurrent_session_limit_per_key(strict_edge: RunningEdge) -> None:
    first, second = await _raw(strict_edge, strict_edge.api_key), await _raw(strict_edge, strict_edge.api_key)
    try:
        with pytest.raises(websockets.InvalidStatus) as info:
            await _raw(strict_edge, strict_edge.api_key)
        assert info.value.response.status_code == 429
        assert b"session_limit_exceeded" in (info.value.response.body or b"")
    finally:
        await first.close()
        await second.close()
    await asyncio.sleep(0.2)
    third = await _raw(strict_edge, strict_edge.api_key)  # a slot is free again
    await third.close()


async def test_edge_wide_session_cap_refuses_any_key(edge_factory: EdgeFactory) -> None:
    full = await edge_factory(
        [("nowhere", f"http://127.0.0.1:{free_port()}")], limits=LimitSettings(max_sessions=1)
    )
    first = await _raw(full, full.api_key)
    try:
        with pytest.raises(websockets.InvalidStatus) as info:
            await _raw(full, full.api_key)
        assert info.value.response.status_code == 429
        assert b"edge_session_limit_exceeded" in (info.value.response.body or b"")
    finally:
        await first.close()


async def test_oversized_token_is_refused_at_once_not_hung(strict_edge: RunningEdge) -> None:
    """An 8 KB bearer token used to hang the handshake (uvicorn's WebSocket parser refused the
    header line without answering); now the request head bound answers 431."""
    for size in (8_000, 70_000):
        with pytest.raises(websockets.InvalidStatus) as info:
            async with asyncio.timeout(30):  # only stops a hang from hanging the suite
                await _raw(strict_edge, "x" * size)
        assert info.value.response.status_code == 431
    ws = await _raw(strict_edge, strict_edge.api_key)  # the edge carries on
    assert (await _next(ws))["type"] == "session.created"
    await ws.close()


async def test_event_rate_limit_answers_error_and_session_survives(strict_edge: RunningEdge) -> None:
    ws = await _raw(strict_edge, strict_edge.api_key)
    await _next(ws, "session.created")
    for _ in range(40):  # burst is 30
        await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
    codes = []
    for _ in range(40):
        event = await _next(ws)
        if event["type"] == "error":
            codes.append(event["error"]["code"])
    assert "rate_limit_exceeded" in codes
    await ws.close()


async def test_session_duration_limit_closes_with_error(edge_factory: EdgeFactory) -> None:
    short = await edge_factory(
        [("nowhere", f"http://127.0.0.1:{free_port()}")], limits=LimitSettings(max_session_s=2.0)
    )
    ws = await _raw(short, short.api_key)
    await _next(ws, "session.created")
    event = await _next(ws, "error")
    assert event["error"]["code"] == "session_expired"
    with pytest.raises(websockets.ConnectionClosed):
        async with asyncio.timeout(5):
            await ws.recv()


# -- bad events: each answered with an error code, the session carries on ----------------------------


async def test_bad_events_get_error_events_and_session_carries_on(strict_edge: RunningEdge) -> None:
    ws = await _raw(strict_edge, strict_edge.api_key)
    bystander = await _raw(strict_edge, strict_edge.api_key)
    await _next(ws, "session.created")
    await _next(bystander, "session.created")
    for raw, code in BAD_EVENTS:
        await ws.send(raw)
        event = await _next(ws)
        assert event["type"] == "error", (raw[:60], event)
        assert event["error"]["code"] == code, (raw[:60], event["error"])
        assert event["error"]["message"]
        await asyncio.sleep(0.2)  # stay under the event rate limit
    # Binary frames are not Realtime events either.
    await ws.send(b"\x00\x01")
    assert (await _next(ws))["error"]["code"] == "invalid_json"
    # Manual turns: the buffer is bounded (max_buffer_s = 1 s here).
    await ws.send(
        json.dumps(
            {
                "type": "session.update",
                "session": {"type": "realtime", "audio": {"input": {"turn_detection": None}}},
            }
        )
    )
    updated = await _next(ws, "session.updated")
    assert updated["session"]["audio"]["input"]["turn_detection"] is None
    chunk = base64.b64encode(bytes(24_000)).decode()  # 0.5 s of 24 kHz PCM16
    for _ in range(3):
        await ws.send(
            json.dumps({"type": "input_audio_buffer.append", "audio": chunk, "event_id": "evt_full"})
        )
        await asyncio.sleep(0.2)
    full = await _next(ws, "error")
    assert full["error"]["code"] == "input_audio_buffer_full" and full["error"]["event_id"] == "evt_full"
    # Still the same, working session; and the other session never noticed.
    await ws.send(json.dumps({"type": "input_audio_buffer.clear"}))
    assert (await _next(ws))["type"] == "input_audio_buffer.cleared"
    await bystander.send(
        json.dumps({"type": "session.update", "session": {"type": "realtime", "instructions": "hi"}})
    )
    assert (await _next(bystander))["type"] == "session.updated"
    await ws.close()
    await bystander.close()
