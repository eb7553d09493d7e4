"""Fuzz the Realtime session with generated client events: well-formed events with extreme values,
wrong types, missing fields, unknown types, huge strings and integers, bad base64, nested junk,
raw text and bytes. The strategies here are also what ``test_fuzz_http.py`` sends to a real edge.

Whatever comes in, the session answers each frame at once (an ``error`` event, or what the event
does), never with ``server_error``, and still serves a normal turn afterwards.

Fast tier: ``edge.testing`` stand-ins (scripted router, energy VAD, tone voice) where the models are
not what is under test; the session, its parsing, limits and turn logic are the real ones.
``derandomize=True``: CI runs the same cases every time.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import ScriptedRouter, SessionHarness, memory_services, spoken_reply, tone

# -- what a client may send -------------------------------------------------------------------------

EXTREME_NUMBERS: list[Any] = [
    0, -1, 1, 31, 32, 2**31, -(2**31), 2**53, 2**53 + 1, 2**63, 2**64, -(2**64), 2**64 + 1, 10**30,
    0.0, -0.0, 0.5, 1.0, 1e-308, 1e308, -1e308, float("nan"), float("inf"), float("-inf"),
]  # fmt: skip
"""Bounds of every integer and float type the edge meets (JSON, msgpack, numpy, C int), and the
non-finite floats ``json.dumps`` writes (as ``NaN``/``Infinity``, which are not JSON)."""

_AUDIO = base64.b64encode(tone(0.05)).decode()

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


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside ``value`` (dict keys and list indexes), ``value`` itself excluded."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*path, key)
        yield from _paths(child, (*path, key))


def _set(event: Any, path: tuple[Any, ...], value: Any, *, delete: bool = False) -> None:
    *parents, last = path
    for key in parents:
        event = event[key]
    if delete:
        del event[last]
    else:
        event[last] = value


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event with one to three mutations."""
    event = json.loads(json.dumps(draw(st.sampled_from(VALID_EVENTS))))
    event["event_id"] = "evt_fuzz"
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(event))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        how = draw(st.sampled_from(["extreme", "junk", "delete", "add", "type"]))
        try:
            if how == "extreme":
                _set(event, path, draw(st.sampled_from(EXTREME_NUMBERS) | huge_strings))
            elif how == "junk":
                _set(event, path, draw(json_values))
            elif how == "delete":
                _set(event, path, None, delete=True)
            elif how == "add":
                event[draw(st.text(max_size=12))] = draw(json_values)
            else:
                event["type"] = draw(
                    st.sampled_from([e["type"] for e in VALID_EVENTS]) | st.text(max_size=30)
                )
        except (KeyError, IndexError, TypeError):  # an earlier mutation removed or replaced the parent
            pass
    return event


def _dumps(event: Any) -> str:
    return json.dumps(event)


raw_frames = st.one_of(
    mutated_events().map(_dumps),
    mutated_events().map(_dumps),
    mutated_events().map(_dumps),
    json_values.map(_dumps),
    st.text(max_size=200),
    st.binary(max_size=200),
    st.sampled_from([("[", 100_000), ('{"a":', 5_000), ("1", 5_000), ('{"type": "session.update"', 1)]).map(
        lambda bomb: bomb[0] * bomb[1]
    ),
)
"""One client frame: mostly mutated events, some any-JSON, text, bytes and parser bombs."""


# -- the session ------------------------------------------------------------------------------------

HANG_GUARD_S = 30.0
"""Only stops a hung handler from hanging the suite: an answer is due as the handler returns."""

SILENT_OK = frozenset({"input_audio_buffer.append", "response.cancel", "response.create"})
"""Events a session may accept without a word (audio that starts no turn; a cancel whose
``response.done`` comes from the response)."""

FUZZ_SETTINGS = EdgeSettings(
    api_keys=("test-key",), limits=LimitSettings(events_per_s=1e6, events_burst=1_000_000)
)
"""Default limits but the event rate: the fuzz sends as fast as it can."""


def check_answers(frame: str | bytes, answers: list[dict[str, Any]]) -> None:
    for event in answers:
        if event["type"] == "error":
            error = event["error"]
            assert error["code"] != "server_error", (frame[:300], error)
            assert error["type"] == "invalid_request_error" and error["message"], error
    if not answers:
        assert any(f'"{t}"' in str(frame) for t in SILENT_OK), ("no answer", frame[:300])


async def healthy(edge: SessionHarness) -> None:
    """The session still serves: a settings change and a text turn."""
    done = len(edge.of_type("response.done"))
    if edge.session.responses.response is not None:  # one the fuzz started: let it end
        edge.session.responses.cancel("client_cancelled")
        done += 1
        await edge.wait_for("response.done", done, within_s=HANG_GUARD_S)
    await edge.send({"type": "session.update", "session": {"type": "realtime", "instructions": "ok"}})
    assert edge.sent[-1]["type"] == "session.updated", edge.sent[-1]
    await edge.say("ping")
    await edge.send({"type": "response.create"})
    events = await edge.wait_for("response.done", done + 1, within_s=HANG_GUARD_S)
    assert events[-1]["response"]["status"] == "completed", events[-1]


async def drive(frames: list[str | bytes]) -> None:
    services = memory_services(ScriptedRouter(spoken_reply("Ok.")), settings=FUZZ_SETTINGS)
    async with SessionHarness(services) as edge:
        for frame in frames:
            before = len(edge.sent)
            async with asyncio.timeout(HANG_GUARD_S):
                await edge.send(frame)
            check_answers(frame, edge.sent[before:])
        await healthy(edge)
        errors = [e["error"] for e in edge.of_type("error")]
        assert all(e["code"] != "server_error" for e in errors), errors


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(raw_frames, min_size=1, max_size=5))
def test_any_client_frames_get_clear_answers_and_leave_the_session_healthy(
    frames: list[str | bytes],
) -> None:
    asyncio.run(drive(frames))
