"""Nothing a client does holds a socket or a slot unbounded: idle sessions are closed (with an
``error`` event first) and give their slot back, the handshake has a deadline, and oversized
credentials are refused at once (the 8 KB bearer token that hung the handshake included).

Fast tier: the real app on stand-ins (``edge.testing``: scripted router, energy VAD, tone voice; the
models are not what is under test), through Litestar's test client or the edge's real server
(``edge.app.server.serve_edge``: uvicorn on loopback).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest
from litestar.exceptions import WebSocketDisconnect
from litestar.testing import TestClient

from edge.app.asgi import create_app
from edge.app.server import serve_edge
from edge.app.services import EdgeServices
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.stores.memory import LocalStore
from edge.tenancy.auth import Authenticator, key_id
from edge.tenancy.client_secrets import ClientSecrets
from edge.testing import memory_services
from tests.fixtures.common import free_port

KEY = "caller-key-0123"
AUTH = {"Authorization": f"Bearer {KEY}"}


def test_idle_session_is_closed_with_a_reason_and_frees_its_slot() -> None:
    limits = replace(LimitSettings(), idle_timeout_s=0.3, max_sessions_per_key=1)
    services = memory_services(settings=EdgeSettings(api_keys=(KEY,), limits=limits))
    with TestClient(create_app(services)) as http:
        with http.websocket_connect("/v1/realtime", headers=AUTH) as ws:
            assert ws.receive_json()["type"] == "session.created"
            ws.send_json({"type": "input_audio_buffer.clear"})  # a client event resets the clock
            event = ws.receive_json()
            while event["type"] != "error":
                event = ws.receive_json()
            assert event["error"]["code"] == "session_idle_timeout"
            assert "no client event" in event["error"]["message"]
            with pytest.raises(WebSocketDisconnect) as closed:
                ws.receive_json()
            assert closed.value.detail == "session_idle_timeout"
        # The key's only slot is free again: a new session opens at once.
        with http.websocket_connect("/v1/realtime", headers=AUTH) as ws:
            assert ws.receive_json()["type"] == "session.created"
    assert services.limits.active(key_id(KEY)) == 0


def test_a_session_that_keeps_talking_outlives_many_idle_periods() -> None:
    """The idle timer re-arms from the last frame (it is not a timeout per receive): events every
    0.1 s for 6 s keep a 2 s idle limit from firing (a stall of under 2 s is tolerated); then
    silence closes the session."""
    limits = replace(LimitSettings(), idle_timeout_s=2.0)
    services = memory_services(settings=EdgeSettings(api_keys=(KEY,), limits=limits))
    with TestClient(create_app(services)) as http:
        with http.websocket_connect("/v1/realtime", headers=AUTH) as ws:
            assert ws.receive_json()["type"] == "session.created"
            for _ in range(60):
                ws.send_json({"type": "input_audio_buffer.clear"})
                assert ws.receive_json()["type"] == "input_audio_buffer.cleared"
                time.sleep(0.1)
            event = ws.receive_json()
            assert event["type"] == "error" and event["error"]["code"] == "session_idle_timeout"


class HangingStore(LocalStore):
    """A store whose reads never answer: it stands in for a Redis that accepted the connection and
    went silent (what is under test is the edge's own handshake deadline, not Redis)."""

    async def get(self, key: str, renew_for: int | timedelta | None = None) -> bytes | None:
        await asyncio.Event().wait()
        return None


def test_handshake_has_a_deadline_even_when_the_store_hangs() -> None:
    settings = EdgeSettings(api_keys=(KEY,), limits=replace(LimitSettings(), handshake_timeout_s=0.3))
    services = memory_services(settings=settings)
    services.auth = Authenticator(settings, ClientSecrets(HangingStore(), default_ttl_s=60))
    with TestClient(create_app(services)) as http:
        with pytest.raises(WebSocketDisconnect) as refused:
            with http.websocket_connect("/v1/realtime", headers={"Authorization": "Bearer ek_whatever"}):
                pass
        assert refused.value.code == 4408 and refused.value.detail == "handshake_timeout"
        with http.websocket_connect("/v1/realtime", headers=AUTH) as ws:  # API keys need no store
            assert ws.receive_json()["type"] == "session.created"


@contextlib.asynccontextmanager
async def _edge(services: EdgeServices) -> AsyncIterator[int]:
    """``services`` served by the edge's own server on a free loopback port."""
    settings = replace(services.settings, port=free_port())
    stop, listening = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(
        serve_edge(settings, services.router, stop=stop, report=lambda _: listening.set(), services=services)
    )
    waiter = asyncio.create_task(listening.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    assert listening.is_set(), "the edge did not start"
    try:
        yield settings.port
    finally:
        stop.set()
        await task


async def _exchange(port: int, request: bytes) -> bytes:
    """Send ``request`` raw and read until the server closes (the guard only stops a broken test)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(30):
            return await reader.read()
    finally:
        writer.close()


def _upgrade(token: str) -> bytes:
    return (
        "GET /v1/realtime HTTP/1.1\r\nHost: edge\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Bearer {token}\r\n\r\n"
    ).encode()


async def test_oversized_bearer_tokens_are_refused_at_once() -> None:
    services = memory_services(settings=EdgeSettings(api_keys=(KEY,)))
    async with _edge(services) as port:
        # Over the edge's credential limit: the app refuses it before any lookup, with a reason.
        answer = await _exchange(port, _upgrade("x" * 5000))
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 431")
        assert json.loads(body)["error"]["code"] == "credential_too_large"
        # Over websockets' header line limit (8 KB): the bug that hung the handshake.
        for size in (8200, 20_000):
            answer = await _exchange(port, _upgrade("x" * size))
            assert answer.startswith(b"HTTP/1.1 431"), answer[:80]
        # And the edge still serves.
        answer = await _exchange(port, b"GET /health HTTP/1.1\r\nHost: edge\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200")
