"""Is the target still serving? A well-formed request answered, and ``/health`` ok: checked before
the fuzz (so a target that was never up is said plainly) and after it (the oracle's last word)."""

from __future__ import annotations

import ssl
from typing import Any

import httpx
from websockets.exceptions import ConnectionClosed, WebSocketException

from voicemesh.fuzz.events import dumps, open_session
from voicemesh.fuzz.frames import read_until
from voicemesh.fuzz.oracle import OracleFailure, Unhealthy
from voicemesh.fuzz.target import EdgeTarget, RegionTarget
from voicemesh.fuzz.turns import connect_turns


def _health(url: str, timeout_s: float, verify: ssl.SSLContext | bool = True) -> None:
    try:
        status = httpx.get(f"{url}/health", timeout=timeout_s, verify=verify).status_code
    except httpx.HTTPError as exc:
        raise Unhealthy(f"GET {url}/health failed: {exc!r}") from None
    if status != 200:
        raise Unhealthy(f"GET {url}/health answered {status}")


def _refuse_errors(message: Any) -> None:
    if message.get("type") in ("error", "turn.rejected"):
        raise Unhealthy(f"a well-formed request got {str(message)[:300]}")


def check_edge(target: EdgeTarget, timeout_s: float) -> None:
    """``/health`` 200, and a new session answers a text turn with a completed ``response.done``."""
    _health(target.http_url, timeout_s)
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say ok."}]}
    try:
        with open_session(target, timeout_s) as ws:
            ws.send(dumps({"type": "conversation.item.create", "item": item}))
            ws.send(dumps({"type": "response.create", "response": {"max_output_tokens": 8}}))
            done = read_until(ws, timeout_s, lambda e: e.get("type") == "response.done", _refuse_errors)
    except (OracleFailure, OSError, WebSocketException, TimeoutError) as exc:
        raise Unhealthy(
            f"a well-formed text turn was not answered within {timeout_s:g} s ({exc!r})"
        ) from None
    if done["response"].get("status") != "completed":
        raise Unhealthy(f"a well-formed text turn ended {str(done)[:300]}")


def check_region(target: RegionTarget, timeout_s: float) -> None:
    """``/health`` ready, and (with the key set) a text-only turn completes."""
    _health(target.http_url, timeout_s, target.auth().ssl or True)
    if target.keys_path is None:
        return
    start = {"type": "turn.start", "turn_id": "fuzz-health", "text": "Say ok.", "output_audio": False,
             "max_output_tokens": 4}  # fmt: skip
    try:
        with connect_turns(target, "valid", timeout_s) as ws:
            assert ws is not None  # a valid token refused raises Unhealthy
            ws.send(dumps(start))
            done = read_until(ws, timeout_s, lambda m: m.get("type") == "turn.done", _refuse_errors)
    except (OracleFailure, OSError, WebSocketException, TimeoutError, ConnectionClosed) as exc:
        raise Unhealthy(f"a well-formed turn was not answered within {timeout_s:g} s ({exc!r})") from None
    if done.get("status") != "completed":
        raise Unhealthy(f"a well-formed turn ended {str(done)[:300]}")
