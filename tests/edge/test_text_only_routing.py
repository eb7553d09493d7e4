"""Text-only turns through the real router (``router.core.Router``) to scripted stand-in regions
(``router.testing``), behind a real edge session: a region failing mid-answer hands over what the
client was already shown, and text alone keeps an attempt alive (no audio is ever coming).

The stand-in regions speak the real turn protocol on loopback sockets; no model is under test.
Nothing asserts on elapsed time: deadlines are either out of reach or checked as pure bookkeeping.
"""

from __future__ import annotations

import pytest

from edge.testing import SessionHarness, memory_services
from router.core import Router
from router.deadlines import AttemptDeadline, Stage
from router.health import RegionHealth
from router.registry import Location, RegionRecord, Registry
from router.settings import RouterSettings
from router.testing import Admit, Crash, Done, Hear, Say, ScriptedRegion
from wire.turn import TextDelta, Transcript

EDGE, NEAR, FAR = Location(50.0, 8.0), Location(50.1, 8.1), Location(38.9, -77.4)
LONG = {"first_byte_floor_s": 60.0, "first_audio_floor_s": 60.0, "stall_floor_s": 60.0}
"""Deadlines no test reaches: what fails a turn over here is a crash."""


async def test_a_text_answer_cut_by_a_crash_continues_after_what_was_shown() -> None:
    async with (
        ScriptedRegion("a", lambda _s: [Admit(), Hear(), Say("Paris is "), Say("big"), Crash()]) as a,
        ScriptedRegion("b", lambda _s: [Admit(), Hear(), Say(" and old."), Done()]) as b,
    ):
        settings = RouterSettings(location=EDGE, probe_interval_s=0, **LONG)  # type: ignore[arg-type]
        registry = Registry(regions=[a.record(NEAR), b.record(FAR)])
        async with Router(settings, registry=registry) as router:
            async with SessionHarness(memory_services(router)) as edge:
                await edge.send(
                    {"type": "session.update", "session": {"type": "realtime", "output_modalities": ["text"]}}
                )
                await edge.say("Tell me about Paris.")
                await edge.send({"type": "response.create"})
                await edge.wait_for("response.done", within_s=60)

    assert [s.output_audio for s in a.starts + b.starts] == [False, False]
    (resumed,) = b.starts
    assert resumed.heard_text == "Paris is big"  # shown text, appended as is (not re-spaced)
    assert resumed.transcript == "Tell me about Paris."
    deltas = "".join(e["delta"] for e in edge.of_type("response.output_text.delta"))
    assert deltas == "Paris is big and old."
    done = edge.of_type("response.done")[0]["response"]
    assert done["status"] == "completed" and done["metadata"]["voicemesh_failed_over_from"] == "a"
    assert not edge.of_type("response.output_audio.delta")
    (record,) = router.failovers.for_turn(resumed.turn_id)
    assert record.gap_s is not None  # the next region's first text ended the failover


def test_each_text_delta_is_a_sign_of_life_for_the_attempt_deadline() -> None:
    """A text-only answer never reaches the audio stage: every delta must move its deadline on."""
    settings = RouterSettings(location=EDGE, first_audio_floor_s=3.0, stall_floor_s=2.0)
    region = RegionHealth(RegionRecord(id="r", url="http://127.0.0.1:1", location=EDGE), settings)
    d = AttemptDeadline(region, started=100.0)
    d.heard(Transcript(turn_id="t", text="hi"), 100.5)
    d.rearm(Transcript(turn_id="t", text="hi"), 100.5, pending_chars=0)
    for now in (101.0, 150.0, 400.0):  # long after any one deadline, but each delta came in time
        delta = TextDelta(turn_id="t", delta="word ")
        d.heard(delta, now)
        d.rearm(delta, now, pending_chars=0)
        assert d.due() > now and d.last_event == now
    assert d.stage is Stage.AUDIO
    assert d.due() == pytest.approx(400.0 + region.stall_deadline_s(0))
