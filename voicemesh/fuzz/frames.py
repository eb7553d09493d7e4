"""Reading a fuzzed WebSocket: JSON text frames until the one awaited, each judged on the way."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from websockets.sync.client import ClientConnection


def send_frame(ws: ClientConnection, frame: str | bytes) -> None:
    """``str`` as a text frame, ``bytes`` as a binary one. A ``str`` holding a lone surrogate goes as the
    invalid UTF-8 it encodes to (``surrogatepass``), still in a text frame: what a broken client sends."""
    if isinstance(frame, str):
        ws.send(frame.encode("utf-8", "surrogatepass"), text=True)
    else:
        ws.send(frame)


def read_until(
    ws: ClientConnection, timeout_s: float, done: Callable[[Any], bool], check: Callable[[Any], None]
) -> Any:
    """Every JSON frame is passed to ``check`` (binary frames, a clause's audio, are skipped) until
    ``done`` says one is awaited; returns it. Raises ``TimeoutError`` after ``timeout_s`` in all."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        frame = ws.recv(timeout=left)
        if isinstance(frame, bytes):
            continue
        message = json.loads(frame)
        check(message)
        if done(message):
            return message
    raise TimeoutError
