"""The fuzzer's oracle catches what it must: a server answering 500, one that never answers, a
region error that is the region's own, a bad token let in. Each against a small fake server on
loopback (real sockets): a fake that fails on purpose is the point, no real edge or region would.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner
from websockets.sync.server import Server, ServerConnection, serve

from tests.fixtures.common import free_port
from voicemesh.cli.common import cli
from voicemesh.cli.fuzz import fuzz
from voicemesh.fuzz import AuthBypass, EdgeTarget, Hang, NotServing, RegionTarget, ServerFault, Unclear, run
from voicemesh.fuzz.events import run_events_case
from voicemesh.fuzz.http import describe, requests, run_http_case
from voicemesh.fuzz.oracle import check_http_status, check_realtime_event, check_turn_message
from voicemesh.fuzz.runner import run_fuzzer
from voicemesh.fuzz.turns import run_turns_case
from wire.region_keys import ensure_key_set

assert fuzz is not None  # registers `voicemesh fuzz` on ``cli``


class _Answers500(BaseHTTPRequestHandler):
    def _fail(self) -> None:
        body = b'{"error": "boom"}'
        self.send_response(500)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_FUZZ = _fail

    def do_HEAD(self) -> None:
        self.send_response(500)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@contextmanager
def _serving(server: ThreadingHTTPServer | Server, port: int) -> Iterator[str]:
    """``server`` answering from a thread of its own, at the URL yielded."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()


@contextmanager
def _http_500() -> Iterator[str]:
    with ThreadingHTTPServer(("127.0.0.1", 0), _Answers500) as server:
        with _serving(server, server.server_address[1]) as url:
            yield url


@contextmanager
def _silent_socket() -> Iterator[str]:
    """Accepts connections and never says a word."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@contextmanager
def _websocket(handler: Callable[[ServerConnection], None]) -> Iterator[str]:
    with serve(handler, "127.0.0.1", 0) as server, _serving(server, server.socket.getsockname()[1]) as url:
        yield url


def test_a_500_is_caught_and_shrunk_to_a_reproducer() -> None:
    with _http_500() as url:
        target = EdgeTarget(url, "k")
        outcome = run_fuzzer(
            "http",
            requests("k"),
            lambda c: run_http_case(target, c, 5.0),
            cases=10,
            deadline=float("inf"),
            seed=1,
            describe=describe,
        )
    assert outcome.failures, "a server answering 500 must fail the fuzz"
    failure = outcome.failures[0]
    assert failure.kind == "server error" and "HTTP 500" in failure.detail, failure
    # Shrunk: any request fails, so the minimal one is a GET of / (a curl line to send it again).
    assert failure.reproducer.startswith("curl -X GET") and failure.reproducer.endswith("'URL/'"), failure


def test_a_hang_is_caught_within_the_case_timeout() -> None:
    with _silent_socket() as url, pytest.raises(Hang):
        run_http_case(EdgeTarget(url, "k"), ("GET", "/health", {}, b""), 0.5)


def _accept_and_ignore(ws: ServerConnection) -> None:
    for _ in ws:
        pass


def test_a_region_that_never_answers_a_frame_is_a_hang(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    ensure_key_set(keys)
    with _websocket(_accept_and_ignore) as url, pytest.raises(Hang, match="sentinel"):
        run_turns_case(RegionTarget(url, keys), ("valid", ['{"type": "turn.cancel"}']), 0.5)


def test_a_realtime_session_that_goes_quiet_is_a_hang() -> None:
    def created_then_quiet(ws: ServerConnection) -> None:
        ws.send(json.dumps({"type": "session.created", "session": {}}))
        for _ in ws:
            pass

    with _websocket(created_then_quiet) as url, pytest.raises(Hang, match="did not answer"):
        run_events_case(EdgeTarget(url, "k"), ['{"type": "input_audio_buffer.commit"}'], 0.5)


def test_a_region_taking_a_bad_token_is_caught() -> None:
    with _websocket(_accept_and_ignore) as url, pytest.raises(AuthBypass, match="garbage"):
        run_turns_case(RegionTarget(url, None), ("garbage", ["{}"]), 0.5)


def test_a_region_error_of_its_own_is_a_server_fault(tmp_path: Path) -> None:
    keys = tmp_path / "keys.json"
    ensure_key_set(keys)

    def internal_error(ws: ServerConnection) -> None:
        for _ in ws:
            ws.send(json.dumps({"type": "error", "code": "internal_error", "message": "boom"}))

    with _websocket(internal_error) as url, pytest.raises(ServerFault, match="not the client's"):
        run_turns_case(RegionTarget(url, keys), ("valid", ["{}"]), 5.0)


def test_realtime_and_region_errors_are_judged() -> None:
    with pytest.raises(ServerFault):
        check_realtime_event(
            {"type": "error", "error": {"type": "server_error", "code": "x", "message": "m"}}
        )
    with pytest.raises(Unclear):
        check_realtime_event({"type": "error", "error": {"type": "invalid_request_error", "message": ""}})
    check_realtime_event({"type": "error", "error": {"type": "invalid_request_error", "message": "fix x"}})
    check_turn_message({"type": "error", "code": "invalid_audio", "message": "odd byte count"})
    with pytest.raises(ServerFault):
        check_turn_message({"type": "turn.done", "status": "failed", "error": "internal_error: boom"})


def test_every_5xx_is_a_fault_and_every_4xx_is_not() -> None:
    check_http_status(404, "POST /v1/twilio/voice", '{"error": {"code": "twilio_not_configured"}}')
    for status in (500, 503):
        with pytest.raises(ServerFault):
            check_http_status(status, "GET /", '{"error": {"code": "server_error", "message": "boom"}}')


def test_a_target_unhealthy_before_the_fuzz_is_said_plainly() -> None:
    with _http_500() as url, pytest.raises(NotServing, match="answered 500"):
        run(edge=EdgeTarget(url, "k"), region=None, cases=1, seconds=5)


def test_the_command_refuses_bad_usage_and_a_dead_target() -> None:
    runner = CliRunner()
    nothing = runner.invoke(cli, ["fuzz"])
    assert nothing.exit_code == 2 and "nothing to fuzz" in nothing.output, nothing.output
    dead = runner.invoke(
        cli, ["fuzz", "--edge", f"http://127.0.0.1:{free_port()}", "--api-key", "k", "--seed", "3"]
    )
    assert dead.exit_code == 2 and "not serving" in dead.output and "seed 3" in dead.output, dead.output
