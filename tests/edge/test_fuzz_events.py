"""Fuzz the Realtime session with generated client events: well-formed events with extreme values,
wrong types, missing fields, unknown types, huge strings and integers, bad base64, nested junk,
raw text and bytes: ``voicemesh fuzz``'s strategies (``voicemesh/fuzz/events.py``), which
``test_fuzz_http.py`` sends to a real edge over its socket; here they reach a session in process.

Whatever comes in, the session answers each frame at once (an ``error`` event, or what the event
does), never with ``server_error``, and still serves a normal turn afterwards.

Fast tier: ``edge.testing`` stand-ins (scripted router, energy VAD, tone voice) where the models are
not what is under test; the session, its parsing, limits and turn logic are the real ones.
``derandomize=True``: CI runs the same cases every time.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edge.shared.settings import EdgeSettings, LimitSettings
from edge.testing import ScriptedRouter, SessionHarness, memory_services, spoken_reply
from voicemesh.fuzz.events import raw_frames
from voicemesh.fuzz.oracle import check_realtime_event

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
        check_realtime_event(event)
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
