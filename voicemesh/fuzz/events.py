"""Realtime client events to fuzz an edge with, and one case run over a real WebSocket session.

The strategies: well-formed events with one to three mutations (extreme values, wrong types,
missing fields, unknown types, huge strings and integers, bad base64, nested junk), any JSON, raw
text and bytes, and parser bombs. ``tests/edge/test_fuzz_events.py`` sends them to an in-process
session; ``run_events_case`` to a running edge, over a raw WebSocket (not ``voicemesh.realtime``'s
SDK client, which would never send a malformed frame).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from edge.testing.audio import tone
from voicemesh.fuzz.frames import read_until, send_frame
from voicemesh.fuzz.oracle import (
    Hang,
    ServerFault,
    Unhealthy,
    check_close_code,
    check_http_status,
    check_realtime_event,
)
from voicemesh.fuzz.target import EdgeTarget

EXTREME_NUMBERS: list[Any] = [
    0, -1, 1, 31, 32, 2**31, -(2**31), 2**53, 2**53 + 1, 2**63, 2**64, -(2**64), 2**64 + 1, 10**30,
    0.0, -0.0, 0.5, 1.0, 1e-308, 1e308, -1e308, float("nan"), float("inf"), float("-inf"),
]  # fmt: skip
"""Bounds of every integer and float type the edge meets (JSON, msgpack, numpy, C int), and the
non-finite floats ``json.dumps`` writes (as ``NaN``/``Infinity``, which are not JSON)."""

_AUDIO = base64.b64encode(tone(0.05)).decode()  # loud enough for an energy VAD to call it speech

VALID_EVENTS: list[dict[str, Any]] = [
    {
        "type": "session.update",
        "session": {
            "type": "realtime",
            "instructions": "Be brief.",
            "max_output_tokens": 50,
            "output_modalities": ["audio"],
            "audio": {
                "input": {
                    "format": {"type": "audio/pcm", "rate": 24000},
                    "turn_detection": {
                        "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300,
                        "silence_duration_ms": 500, "idle_timeout_ms": 6000,
                        "create_response": True, "interrupt_response": True,
                    },
                },
                "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "marin", "speed": 1.0},
            },
            "truncation": {"type": "retention_ratio", "retention_ratio": 0.5},
        },
    },
    {
        "type": "conversation.item.create",
        "previous_item_id": None,
        "item": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
    },
    {
        "type": "conversation.item.create",
        "item": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
    },
    {"type": "input_audio_buffer.append", "audio": _AUDIO},
    {"type": "input_audio_buffer.commit"},
    {"type": "input_audio_buffer.clear"},
    {"type": "response.create", "response": {"instructions": "Answer.", "max_output_tokens": 20}},
    {"type": "response.cancel"},
    {"type": "conversation.item.truncate", "item_id": "item_x", "content_index": 0, "audio_end_ms": 10},
    {"type": "conversation.item.retrieve", "item_id": "item_x"},
    {"type": "output_audio_buffer.clear"},
]  # fmt: skip

huge_strings = st.sampled_from(
    [("", 1), ("x", 5_000), ("é", 70_000), ("\x00", 1), ("\ud800", 1), ("%%%not base64%%%", 1)]
).map(lambda seed: seed[0] * seed[1])
"""Empty, long, multi-byte, NUL, a lone surrogate (JSON can escape one; UTF-8 cannot hold it), junk."""
json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(EXTREME_NUMBERS),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    huge_strings,
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
"""Any JSON value (and junk ``json.dumps`` still writes: huge ints, ``NaN``), nested a little."""


def key_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside ``value`` (dict keys and list indexes), ``value`` itself excluded."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*path, key)
        yield from key_paths(child, (*path, key))


def set_path(event: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> None:
    *parents, last = path
    for key in parents:
        event = event[key]
    if delete:
        del event[last]
    else:
        event[last] = value


def mutate(draw: st.DrawFn, event: dict[str, Any], types: list[str]) -> dict[str, Any]:
    """``event`` with one to three mutations; ``types`` are the names a changed ``type`` may take."""
    for _ in range(draw(st.integers(1, 3))):
        paths = list(key_paths(event))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["extreme", "junk", "delete", "add", "type"]))
        try:
            if how == "extreme":
                set_path(event, path, draw(st.sampled_from(EXTREME_NUMBERS) | huge_strings))
            elif how == "junk":
                set_path(event, path, draw(json_values))
            elif how == "delete":
                set_path(event, path, None, delete=True)
            elif how == "add":
                event[draw(st.text(max_size=12))] = draw(json_values)
            else:
                event["type"] = draw(st.sampled_from(types) | st.text(max_size=30))
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed or replaced the parent
            pass
    return event


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid Realtime event with one to three mutations."""
    event = json.loads(json.dumps(draw(st.sampled_from(VALID_EVENTS))))
    event["event_id"] = "evt_fuzz"
    return mutate(draw, event, [e["type"] for e in VALID_EVENTS])


def dumps(event: Any) -> str:
    return json.dumps(event)


parser_bombs = st.sampled_from(
    [("[", 100_000), ('{"a":', 5_000), ("1", 5_000), ('{"type": "session.update"', 1)]
).map(lambda bomb: bomb[0] * bomb[1])

raw_frames = st.one_of(
    mutated_events().map(dumps),
    mutated_events().map(dumps),
    mutated_events().map(dumps),
    json_values.map(dumps),
    st.text(max_size=200),
    st.binary(max_size=200),
    huge_strings,
    parser_bombs,
)
"""One client frame: mostly mutated events, some any-JSON, text (invalid UTF-8 too), bytes and
parser bombs."""

event_cases = st.lists(raw_frames, min_size=1, max_size=4)
"""One fuzz case: the frames a new session gets, in order (out-of-order events among them)."""

SENTINEL = "fuzz-end"


@contextmanager
def open_session(target: EdgeTarget, timeout_s: float) -> Iterator[ClientConnection]:
    """A Realtime session on ``target``, its ``session.created`` read."""
    try:
        with connect(
            target.realtime_url, additional_headers=target.auth_headers(), open_timeout=timeout_s,
            max_size=2**24, close_timeout=1,
        ) as ws:  # fmt: skip
            first = json.loads(ws.recv(timeout=timeout_s))
            if first.get("type") != "session.created":
                raise ServerFault(f"a new session began with {str(first)[:200]}, not session.created")
            yield ws
    except InvalidStatus as exc:
        check_http_status(exc.response.status_code, "the Realtime handshake")
        raise Unhealthy(
            f"the Realtime handshake was refused: HTTP {exc.response.status_code} (the key?)"
        ) from None


def _is_sentinel(event: Any) -> bool:
    return bool(event.get("type") == "session.updated" and event["session"].get("instructions") == SENTINEL)


def run_events_case(target: EdgeTarget, frames: list[str | bytes], timeout_s: float) -> None:
    """Send ``frames`` on a new session, then a sentinel ``session.update``: events are handled in
    order, so once it is answered every frame before it was. Raises an ``OracleFailure``."""
    sentinel = {"type": "session.update", "session": {"type": "realtime", "instructions": SENTINEL}}
    try:
        with open_session(target, timeout_s) as ws:
            try:
                for frame in [*frames, dumps(sentinel)]:
                    send_frame(ws, frame)
                read_until(ws, timeout_s, _is_sentinel, check_realtime_event)
            except ConnectionClosed as exc:
                # Closing on a frame it cannot take (too big, not UTF-8) is an answer, if the code says so.
                check_close_code(exc.rcvd.code if exc.rcvd else None, "the Realtime session")
    except TimeoutError:
        raise Hang(f"the session did not answer within {timeout_s:g} s") from None
