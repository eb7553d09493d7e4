"""The region turn protocol (``wire.turn``) to fuzz a region with, and one case run against a running
region: malformed control frames, audio before or without ``turn.start``, wrong sizes, bad tokens.

A case is a credential and the frames one connection carries. A bad credential must be refused at
the handshake (401, or close code 4401); on an accepted connection every frame is answered by a
client ``error`` (or by what it asks for), never ``internal_error``, and a sentinel ``turn.start``
(one the region always refuses, naming its own ``turn_id``) is answered within the timeout.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jwt
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from voicemesh.fuzz.events import dumps, huge_strings, json_values, mutate, parser_bombs
from voicemesh.fuzz.frames import read_until, send_frame
from voicemesh.fuzz.oracle import (
    AuthBypass,
    Hang,
    Unhealthy,
    check_close_code,
    check_http_status,
    check_turn_message,
)
from voicemesh.fuzz.target import RegionTarget
from wire.client import turns_url
from wire.region_auth import AUDIENCE, MAX_HEADER_CHARS
from wire.region_keys import KeyFile

_SECOND = 32_000
"""Bytes in one second of 16 kHz PCM16."""

VALID_FRAMES: list[dict[str, Any]] = [
    {"type": "turn.start", "turn_id": "t1", "text": "Say ok.", "output_audio": False, "max_output_tokens": 4},
    {"type": "turn.start", "turn_id": "t2", "audio_bytes": 3_200, "transcribe_only": True},
    {"type": "turn.start", "turn_id": "t3", "speak_text": "Ok.", "voice": "", "speed": 1.0},
    {
        "type": "turn.start", "turn_id": "t4", "text": "Hi", "output_audio": False, "max_output_tokens": 4,
        "history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        "tools": [{"name": "f", "parameters": {"type": "object"}}], "tool_choice": {"name": "f"},
    },
    {"type": "turn.cancel", "turn_id": "t1"},
]  # fmt: skip
"""Well-formed control frames (small, text-only answers: a case that slips through costs little)."""


@st.composite
def control_frames(draw: st.DrawFn) -> dict[str, Any]:
    frame = json.loads(json.dumps(draw(st.sampled_from(VALID_FRAMES))))
    return mutate(draw, frame, ["turn.start", "turn.cancel", "turn.done", "error"])


audio_frames = st.one_of(
    st.sampled_from([0, 1, 3_199, 3_200, 3_202, 31 * _SECOND]).map(bytes),
    st.binary(max_size=400),
)
"""Empty, odd, announced, not announced, over the region's 30 s, random."""

frames = st.one_of(
    control_frames().map(dumps),
    control_frames().map(dumps),
    control_frames().map(dumps),
    json_values.map(dumps),
    st.text(max_size=200),
    huge_strings,
    parser_bombs,
    audio_frames,
)

CREDENTIALS = [
    "valid", "valid", "valid", "valid", "none", "empty", "garbage", "basic", "oversized", "metrics",
    "unknown-kid", "wrong-secret", "expired", "wrong-audience", "future", "too-long-lived", "unsigned",
]  # fmt: skip
"""Mostly a valid token (so the frames reach the session); every way a token can be wrong."""

turn_cases = st.tuples(st.sampled_from(CREDENTIALS), st.lists(frames, min_size=1, max_size=4))
"""One fuzz case: (credential, the frames one connection carries)."""

SENTINEL_ID = "fuzz-sentinel"
SENTINEL = dumps({"type": "turn.start", "turn_id": SENTINEL_ID, "audio_bytes": -1})


def authorization(target: RegionTarget, credential: str) -> str | None:
    """The ``Authorization`` header of ``credential`` (``None``: no header)."""
    now = int(time.time())  # JWT times are whole seconds
    claims: dict[str, Any] = {"aud": AUDIENCE, "sub": "fuzz", "iat": now, "exp": now + 60}
    if target.keys_path is not None:
        key = KeyFile(target.keys_path).current().signing_key(time.time())
        kid, secret = key.kid, key.secret_bytes
    else:
        kid, secret = "fuzz", b"f" * 32
    signed = {
        "valid": (claims, kid, secret),
        "unknown-kid": (claims, "no-such-key", secret),
        "wrong-secret": (claims, kid, b"w" * 32),
        "expired": ({**claims, "iat": now - 900, "exp": now - 600}, kid, secret),
        "wrong-audience": ({**claims, "aud": "voicemesh-edge"}, kid, secret),
        "future": ({**claims, "iat": now + 3_600, "exp": now + 3_660}, kid, secret),
        "too-long-lived": ({**claims, "exp": now + 86_400}, kid, secret),
    }
    if credential in signed:
        payload, key_id, key_secret = signed[credential]
        return "Bearer " + jwt.encode(payload, key_secret, algorithm="HS256", headers={"kid": key_id})
    return {
        "none": None,
        "empty": "",
        "garbage": "Bearer not-a-token",
        "basic": "Basic ZnV6ejpmdXp6",
        "oversized": "Bearer " + "x" * (MAX_HEADER_CHARS + 10),
        "metrics": "Bearer vmm_" + "x" * 40,
        "unsigned": "Bearer " + jwt.encode(claims, "", algorithm="none", headers={"kid": kid}),
    }[credential]


@contextmanager
def connect_turns(
    target: RegionTarget, credential: str, timeout_s: float
) -> Iterator[ClientConnection | None]:
    """The turn WebSocket; ``None`` when the region refused the credential, as it must a bad one."""
    header = authorization(target, credential)
    headers = {} if header is None else {"Authorization": header}
    good = credential == "valid" and target.keys_path is not None
    try:
        with connect(
            turns_url(target.url), additional_headers=headers, open_timeout=timeout_s, max_size=2**24,
            close_timeout=1, ssl=target.auth().ssl,
        ) as ws:  # fmt: skip
            if not good and not _refused_after_accept(ws, timeout_s):
                raise AuthBypass(f"a {credential} token was accepted")
            yield ws if good else None
    except InvalidStatus as exc:
        check_http_status(exc.response.status_code, f"the turn handshake with a {credential} token")
        if good:
            raise Unhealthy(f"a valid token was refused: HTTP {exc.response.status_code}") from None
        yield None


def _refused_after_accept(ws: ClientConnection, timeout_s: float) -> bool:
    """An ASGI server without the handshake-response extension refuses after accepting: close 4401."""
    try:
        ws.recv(timeout=timeout_s)
    except ConnectionClosed as exc:
        return exc.rcvd is not None and exc.rcvd.code == 4401
    except TimeoutError:
        pass
    return False


def _is_sentinel_answer(message: Any) -> bool:
    return bool(message.get("turn_id") == SENTINEL_ID and message.get("type") == "error")


def run_turns_case(target: RegionTarget, case: tuple[str, list[str | bytes]], timeout_s: float) -> None:
    credential, sent = case
    try:
        with connect_turns(target, credential, timeout_s) as ws:
            if ws is None:
                return
            try:
                for frame in [*sent, SENTINEL]:
                    send_frame(ws, frame)
                read_until(ws, timeout_s, _is_sentinel_answer, check_turn_message)
            except ConnectionClosed as exc:
                check_close_code(exc.rcvd.code if exc.rcvd else None, "the turn connection")
    except TimeoutError:
        raise Hang(
            f"no answer within {timeout_s:g} s (to the handshake or the sentinel turn.start)"
        ) from None
