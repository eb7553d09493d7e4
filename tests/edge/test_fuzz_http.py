"""Fuzz a real edge over loopback: junk to its HTTP endpoints (``POST /v1/realtime/client_secrets``,
``/web/<path>``, ``/status``, ``/health``, ``/metrics``, any path), generated Realtime events over its
WebSocket, an oversized request head and a slow one.

Nothing answers 5xx or ``server_error``, nothing hangs (each request or event is answered within a
guard that only stops a hung server from hanging the suite), and the edge still serves a normal
session afterwards.

Slow tier (a real uvicorn in a thread, bounded to a few hundred requests). The router, VAD and
voice are ``edge.testing`` stand-ins: the models are not what is under test, the edge's HTTP and
WebSocket surface is. ``derandomize=True``: CI runs the same cases every time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from websockets.sync.client import ClientConnection, connect

from edge.app.server import serve_edge
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import ScriptedRouter, memory_services, spoken_reply
from tests.edge.test_fuzz_events import json_values, raw_frames
from tests.fixtures.common import free_port

GUARD_S = 30.0
"""Only stops a hung server from hanging the suite."""

KEY = "fuzz-key"

FUZZ = settings(
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@dataclass
class ThreadedEdge:
    """A real edge (uvicorn + Litestar) serving from its own thread and event loop."""

    settings: EdgeSettings

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.settings.port}/v1/realtime?model=x"

    def __post_init__(self) -> None:
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        services = memory_services(ScriptedRouter(spoken_reply("Ok.")), settings=self.settings)
        await serve_edge(
            self.settings, services.router, stop=self._stop, report=lambda _: self._ready.set(),
            services=services,
        )  # fmt: skip

    def __enter__(self) -> ThreadedEdge:
        self._thread.start()
        assert self._ready.wait(GUARD_S), "the edge did not start"
        return self

    def __exit__(self, *_: object) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(GUARD_S)


@pytest.fixture(scope="module")
def fuzzed_edge() -> Iterator[ThreadedEdge]:
    """The edge the fuzz drives with hundreds of generated requests (tens of seconds: a heavy fixture,
    so every test here is in the slow tier, tests/conftest.py)."""
    unlimited = LimitSettings(
        connect_rate_per_s=1e6, connect_burst=1_000_000, mint_rate_per_s=1e6, mint_burst=1_000_000,
        events_per_s=1e6, events_burst=1_000_000, head_timeout_s=1.0,
    )  # fmt: skip
    with ThreadedEdge(
        EdgeSettings(api_keys=(KEY,), admin_keys=("fuzz-admin",), port=free_port(), limits=unlimited)
    ) as running:
        yield running


@contextlib.contextmanager
def _session(edge: ThreadedEdge) -> Iterator[ClientConnection]:
    headers = {"Authorization": f"Bearer {KEY}"}
    with connect(edge.ws_url, additional_headers=headers, open_timeout=GUARD_S) as ws:
        assert _next(ws)["type"] == "session.created"
        yield ws


def _next(ws: ClientConnection) -> dict[str, Any]:
    event: dict[str, Any] = json.loads(ws.recv(timeout=GUARD_S))
    if event["type"] == "error":
        assert event["error"]["code"] != "server_error", event
    return event


def _until(ws: ClientConnection, type_: str, **fields: Any) -> list[dict[str, Any]]:
    """Every event up to the first of ``type_`` (whose fields match); each is checked by ``_next``."""
    seen = []
    while True:
        event = _next(ws)
        seen.append(event)
        if event["type"] == type_ and all(event.get(k) == v for k, v in fields.items()):
            return seen


def assert_healthy(edge: ThreadedEdge) -> None:
    """The edge still serves: ``/health`` and a whole text turn on a new session."""
    assert httpx.get(edge.http_url + "/health", timeout=GUARD_S).status_code == 200
    with _session(edge) as ws:
        item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ping"}]}
        ws.send(json.dumps({"type": "conversation.item.create", "item": item}))
        ws.send(json.dumps({"type": "response.create"}))
        done = _until(ws, "response.done")[-1]
        assert done["response"]["status"] == "completed", done


# -- HTTP ----------------------------------------------------------------------------------------

header_tokens = st.text(
    st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=60
) | st.sampled_from([KEY, "fuzz-admin", "ek_" + "x" * 30, "a.b.c", "x" * 9_000])
auth_headers = st.one_of(
    st.just({}),
    header_tokens.map(lambda t: {"Authorization": f"Bearer {t}"}),
    header_tokens.map(lambda t: {"Authorization": t}),
)
bodies = st.one_of(json_values.map(lambda v: json.dumps(v).encode()), st.binary(max_size=300))
paths = st.one_of(
    st.text(max_size=80).map(lambda p: "/web/" + quote(p, safe="")),
    st.text(max_size=80).map(lambda p: "/web/" + quote(p, safe="/%.")),
    st.sampled_from(["/status", "/health", "/metrics", "/", "/ops", "/v1/realtime", "/web/talk.js"]),
    st.text(max_size=40).map(lambda p: "/" + quote(p, safe="/")),
)
requests = st.one_of(
    st.tuples(st.just("POST"), st.just("/v1/realtime/client_secrets"), auth_headers, bodies),
    st.tuples(st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD"]), paths, auth_headers, bodies),
)


@settings(FUZZ, max_examples=200)
@given(requests)
@example(("GET", "/web/%00index.html", {}, b""))
@example(("GET", "/web/" + "a" * 5_000, {}, b""))
@example(("POST", "/v1/realtime/client_secrets", {"Authorization": f"Bearer {KEY}"}, b'{"expires_after": 5}'))
def test_http_endpoints_answer_junk_without_5xx(
    fuzzed_edge: ThreadedEdge, request_: tuple[str, str, dict[str, str], bytes]
) -> None:
    method, path, headers, body = request_
    with httpx.Client(base_url=fuzzed_edge.http_url, timeout=GUARD_S) as http:
        response = http.request(method, path, headers=headers, content=body if method != "GET" else None)
    assert response.status_code < 500, (
        method,
        path[:100],
        headers,
        response.status_code,
        response.text[:200],
    )


def test_oversized_and_slow_request_heads_are_refused_not_hung(fuzzed_edge: ThreadedEdge) -> None:
    """An 8 KB bearer token used to hang the WebSocket handshake; a slow head held its connection."""
    for upgrade in (False, True):
        with socket.create_connection(("127.0.0.1", fuzzed_edge.settings.port), timeout=GUARD_S) as sock:
            ws_headers = (
                "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                if upgrade
                else ""
            )
            token = "x" * 8_200
            head = (
                f"GET /v1/realtime HTTP/1.1\r\nHost: x\r\n{ws_headers}Authorization: Bearer {token}\r\n\r\n"
            )
            sock.sendall(head.encode())
            assert sock.recv(100).startswith(b"HTTP/1.1 431 ")
    with socket.create_connection(("127.0.0.1", fuzzed_edge.settings.port), timeout=GUARD_S) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # ...and never the rest
        answer = b""
        while chunk := sock.recv(1000):  # the edge answers 408 and closes
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408 ")
    assert_healthy(fuzzed_edge)


# -- WebSocket -----------------------------------------------------------------------------------


@settings(FUZZ, max_examples=60)
@given(st.lists(raw_frames, min_size=1, max_size=4))
def test_websocket_events_get_answers_without_server_error(
    fuzzed_edge: ThreadedEdge, frames: list[str | bytes]
) -> None:
    with _session(fuzzed_edge) as ws:
        for frame in frames:
            ws.send(frame)
        # Events are handled in order: once the sentinel is answered, every frame before it was.
        ws.send(
            json.dumps({"type": "session.update", "session": {"type": "realtime", "instructions": "end"}})
        )
        while True:
            event = _until(ws, "session.updated")[-1]
            if event["session"]["instructions"] == "end":
                break


def test_the_edge_is_healthy_after_the_fuzz(fuzzed_edge: ThreadedEdge) -> None:
    assert_healthy(fuzzed_edge)
    with httpx.Client(base_url=fuzzed_edge.http_url, timeout=GUARD_S) as http:
        assert http.get("/web/%00index.html").status_code == 404
        assert http.get("/web/talk.js").status_code == 200
