"""``voicemesh fuzz`` against a real edge over loopback: junk to its HTTP endpoints (every route,
``/web/<path>``, any path; bad methods, headers, query strings, bodies) and generated Realtime events
over its WebSocket; then an oversized request head and a slow one.

Nothing answers 5xx or ``server_error``, nothing hangs (each case is answered within a timeout that
only stops a hung server from hanging the suite), and the edge still serves a normal session
afterwards (the fuzzer's own health check, and ``assert_healthy`` here).

Slow tier (a real uvicorn in a thread, bounded to a few hundred cases). The router, VAD and voice
are ``edge.testing`` stand-ins: the models are not what is under test, the edge's HTTP and
WebSocket surface is. A fixed ``--seed``: CI runs the same cases every time.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from prometheus_client import REGISTRY

from edge.app.server import serve_edge
from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import ScriptedRouter, memory_services, spoken_reply
from tests.fixtures.common import free_port
from voicemesh.fuzz import EdgeTarget, run
from voicemesh.fuzz.events import run_events_case
from voicemesh.fuzz.health import check_edge
from voicemesh.fuzz.http import Request, run_http_case

GUARD_S = 30.0
"""Only stops a hung server from hanging the suite."""

KEY = "fuzz-key"


@dataclass
class ThreadedEdge:
    """A real edge (uvicorn + Litestar) serving from its own thread and event loop."""

    settings: EdgeSettings

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.port}"

    @property
    def target(self) -> EdgeTarget:
        return EdgeTarget(self.http_url, KEY)

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


def assert_healthy(edge: ThreadedEdge) -> None:
    """The edge still serves: ``/health`` and a whole text turn on a new session (the fuzzer's check)."""
    check_edge(edge.target, GUARD_S)


# -- HTTP ----------------------------------------------------------------------------------------


def test_the_fuzzer_finds_no_5xx_nor_hang_over_http(fuzzed_edge: ThreadedEdge) -> None:
    report = run(edge=fuzzed_edge.target, region=None, fuzzers=("http",), cases=200, seconds=3_600,
                 seed=34, timeout_s=GUARD_S)  # fmt: skip
    assert report.ok, report.summary()
    assert report.outcomes[0].cases == 200, report.summary()


@pytest.mark.parametrize(
    "request_",
    [
        ("GET", "/web/%00index.html", {}, b""),
        ("GET", "/web/" + "a" * 5_000, {}, b""),
        ("POST", "/v1/realtime/client_secrets", {"Authorization": f"Bearer {KEY}"}, b'{"expires_after": 5}'),
    ],
    ids=["nul-in-path", "long-path", "short-expiry"],
)
def test_requests_that_once_failed_get_no_5xx(fuzzed_edge: ThreadedEdge, request_: Request) -> None:
    run_http_case(fuzzed_edge.target, request_, GUARD_S)


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


def test_the_fuzzer_finds_no_server_error_nor_hang_in_realtime_events(fuzzed_edge: ThreadedEdge) -> None:
    report = run(edge=fuzzed_edge.target, region=None, fuzzers=("events",), cases=60, seconds=3_600,
                 seed=34, timeout_s=GUARD_S)  # fmt: skip
    assert report.ok, report.summary()
    assert report.outcomes[0].cases == 60, report.summary()


def test_a_text_frame_that_is_not_utf8_closes_the_session_without_a_server_error(
    fuzzed_edge: ThreadedEdge,
) -> None:
    """uvicorn closes such a connection itself (1007); the session's answer to the event before it
    then met a RuntimeError and counted a ``server_error`` (found by ``voicemesh fuzz``)."""
    before = _server_errors()
    for _ in range(5):  # the answer and the close race: several tries, each used to fail most times
        run_events_case(fuzzed_edge.target, ['{"type": "input_audio_buffer.clear"}', "\ud800"], GUARD_S)
    assert _server_errors() == before


def _server_errors() -> float:
    labels = {"type": "input_audio_buffer.clear", "outcome": "server_error"}
    return REGISTRY.get_sample_value("voicemesh_edge_client_events_total", labels) or 0.0


def test_the_edge_is_healthy_after_the_fuzz(fuzzed_edge: ThreadedEdge) -> None:
    assert_healthy(fuzzed_edge)
    with httpx.Client(base_url=fuzzed_edge.http_url, timeout=GUARD_S) as http:
        assert http.get("/web/%00index.html").status_code == 404
        assert http.get("/web/talk.js").status_code == 200
