"""Failover against real region processes (SIGKILL = crash, SIGSTOP = hang), on loopback.

Regions share two CPU cores with everything else: each test runs one or two short turns. These
tests assert what happened, never how fast (the router benchmark measures that), and accept any
correct detector of a fault (``CRASH_REASONS``, ``HANG_REASONS``): which one fires first is a race.
The same paths against scripted stand-in regions, without models, are in ``test_failover_loop.py``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from prometheus_client import REGISTRY

from router.api import Degraded, FailedOver, Routed, SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from tests.fixtures.common import SpeechFactory
from tests.fixtures.region import RegionFactory
from tests.router.conftest import (
    CRASH_REASONS,
    EDGE,
    FAR,
    HANG_REASONS,
    NEAR,
    Seen,
    collect,
    record,
    text_turn,
    words,
)
from wire.audio import float_to_pcm16, read_wav
from wire.client import ClauseAudio
from wire.turn import TurnAdmitted, TurnStart


async def test_sigkill_mid_answer_continues_on_another_region_without_repeating(
    region_factory: RegionFactory, speech: SpeechFactory
) -> None:
    victim = region_factory("rt-kill")
    survivor = region_factory("rt-survivor")
    registry = Registry(regions=[record(victim, NEAR), record(survivor, FAR)])
    samples, _rate = read_wav(speech("Tell me about Paris in three sentences.", rate=16_000))
    start = TurnStart(turn_id="kill-1", max_output_tokens=60, temperature=0.0)
    seen = Seen()
    killed_at = 0.0
    async with Router(RouterSettings(location=EDGE, probe_interval_s=0.5), registry=registry) as router:
        await asyncio.sleep(0.3)  # let the pool warm the runner-up
        assert router.pool.idle_count(survivor.id) >= 1, "no warm connection to the runner-up"
        async for ev in router.run_turn(SessionRouting("s-kill"), start, float_to_pcm16(samples)):
            seen.add(ev)
            if isinstance(ev, ClauseAudio) and not killed_at:
                os.kill(victim.pid, signal.SIGKILL)
                killed_at = time.perf_counter()
        status = router.status()

    assert seen.routed == [victim.id, survivor.id]
    (fo,) = seen.failovers
    assert (fo.from_region, fo.to_region) == (victim.id, survivor.id) and fo.reason in CRASH_REASONS
    heard = seen.clauses[victim.id]
    assert heard and fo.heard_text == " ".join(c.strip() for c in heard)
    # The survivor finished the turn, from the transcript (no second STT), after what was heard.
    assert seen.done is not None and seen.done.status == "completed" and seen.done.region == survivor.id
    assert "stt_s" not in seen.done.timings
    assert seen.transcripts[survivor.id] == seen.transcripts[victim.id]
    assert "paris" in seen.transcripts[victim.id].lower()
    continuation = seen.clauses.get(survivor.id, [])
    assert continuation, "no audio resumed after the failover"
    assert not set(map(str.strip, continuation)) & set(map(str.strip, heard)), "a clause was spoken twice"
    heard_words, next_words = words(fo.heard_text), words(" ".join(continuation))
    assert next_words[: len(heard_words)] != heard_words, "the continuation starts over"
    assert seen.first_time(ClauseAudio, after=killed_at + 1e-6) is not None, "no audio after the kill"
    failovers = status["recent_failovers"]
    assert isinstance(failovers, list) and len(failovers) == 1
    entry = failovers[0]
    assert entry["reason"] == fo.reason and entry["gap_s"] is not None
    assert entry["warm_connection"] is True, "the failover paid a handshake"


async def test_sigstop_fails_over_to_another_region(region_factory: RegionFactory) -> None:
    victim = region_factory("rt-hang")
    survivor = region_factory("rt-survivor")
    registry = Registry(regions=[record(victim, NEAR), record(survivor, FAR)])
    # Probes far apart: the router must find out from the turn itself, not from /health. The session
    # sticks to the region that served its first turn however slow that turn was on a busy machine.
    settings = RouterSettings(location=EDGE, probe_interval_s=60, stickiness_s=60.0)
    async with Router(settings, registry=registry) as router:
        first = await collect(router.run_turn(SessionRouting("s-hang"), text_turn(max_tokens=20)))
        assert first.routed == [victim.id] and first.done is not None
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            seen = await collect(router.run_turn(SessionRouting("s-hang"), text_turn(max_tokens=20)))
        finally:
            os.kill(victim.pid, signal.SIGCONT)
    assert seen.routed == [victim.id, survivor.id]
    assert seen.failovers[0].reason in HANG_REASONS
    assert seen.first_time(FailedOver) is not None
    assert seen.done is not None and seen.done.status == "completed" and seen.clauses.get(survivor.id)


async def test_last_region_gets_slack_instead_of_degrading(region_factory: RegionFactory) -> None:
    """With nowhere to fail over to, a region that stalls past its first-byte deadline (but not
    past the stretched one) still serves the turn: a late answer beats the edge's apology. The slack
    is wide (10x) so a loaded machine's slow resume stays inside it."""
    only = region_factory("rt-hang")
    registry = Registry(regions=[record(only, NEAR)])
    settings = RouterSettings(location=EDGE, probe_interval_s=60, last_resort_slack=10.0)
    async with Router(settings, registry=registry) as router:
        warm = await collect(router.run_turn(SessionRouting("s-slack"), text_turn(max_tokens=20)))
        assert warm.done is not None
        deadline = router.regions[only.id].first_byte_deadline_s()
        stall_s = deadline * 1.5
        assert stall_s < deadline * settings.last_resort_slack
        os.kill(only.pid, signal.SIGSTOP)
        resume = asyncio.get_running_loop().call_later(stall_s, os.kill, only.pid, signal.SIGCONT)
        try:
            seen = await collect(router.run_turn(SessionRouting("s-slack"), text_turn(max_tokens=20)))
        finally:
            resume.cancel()
            os.kill(only.pid, signal.SIGCONT)
    assert seen.degraded is None, seen.degraded
    assert seen.routed == [only.id] and seen.done is not None and seen.done.status == "completed"


async def test_breaker_opens_then_closes_through_a_half_open_trial(region_factory: RegionFactory) -> None:
    """A residency-limited session on a hung region: it degrades (never leaves its residency),
    the breaker opens after the threshold, and the recovered region closes it with a trial turn."""
    victim = region_factory("rt-hang")
    other = region_factory("rt-survivor")
    registry = Registry(regions=[record(victim, NEAR, ("bx",)), record(other, NEAR, ("other",))])
    settings = RouterSettings(location=EDGE, probe_interval_s=60, breaker_fail_max=2, breaker_reset_s=2.0)
    session = SessionRouting("s-breaker", residency=frozenset({"bx"}))

    def opened() -> float:
        v = REGISTRY.get_sample_value(
            "voicemesh_router_breaker_transitions_total",
            {"region": victim.id, "from_state": "closed", "to_state": "open"},
        )
        return v or 0.0

    def attempts() -> float:
        return REGISTRY.get_sample_value("voicemesh_router_turns_total", {"region": victim.id}) or 0.0

    opened_before = opened()
    async with Router(settings, registry=registry) as router:
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            for _ in range(2):
                seen = await collect(router.run_turn(session, text_turn(max_tokens=20)))
                assert seen.routed == [victim.id], "a residency-limited turn left its residency"
                assert isinstance(seen.degraded, Degraded) and seen.degraded.tried == (victim.id,)
            assert router.breakers.known_state(victim.id) == "open"
            assert opened() == opened_before + 1
            attempts_before = attempts()
            refused = await collect(router.run_turn(session, text_turn(max_tokens=20)))
            assert refused.routed == [] and refused.degraded is not None and refused.degraded.tried == ()
            assert attempts() == attempts_before  # an open breaker costs nothing: no attempt at all
            status = {r["id"]: r for r in router.status()["regions"]}  # type: ignore[attr-defined]
            assert status[victim.id]["breaker"]["state"] == "open"
        finally:
            os.kill(victim.pid, signal.SIGCONT)
        await asyncio.sleep(settings.breaker_reset_s + 0.2)
        await router.prober.probe_all()  # the next probe tick (probes are slow in this test)
        assert router.regions[victim.id].reachable
        trial = await collect(router.run_turn(session, text_turn(max_tokens=20)))
        assert trial.routed == [victim.id] and trial.done is not None and trial.done.status == "completed"
        assert router.breakers.known_state(victim.id) == "closed"
        assert router.breakers.transitions[victim.id][:2] == ("half-open", "closed")


async def test_residency_session_degrades_instead_of_leaving_its_residency(
    region_factory: RegionFactory,
) -> None:
    victim = region_factory("rt-eu")
    outside = region_factory("rt-survivor")
    registry = Registry(regions=[record(victim, FAR, ("eu",)), record(outside, NEAR, ("us",))])
    session = SessionRouting("s-eu", residency=frozenset({"eu"}))
    seen = Seen()
    async with Router(RouterSettings(location=EDGE, probe_interval_s=0.5), registry=registry) as router:
        async for ev in router.run_turn(session, text_turn()):
            seen.add(ev)
            if isinstance(ev, ClauseAudio) and len(seen.clauses[victim.id]) == 1:
                os.kill(victim.pid, signal.SIGKILL)
        # And the next turn of that session: nothing allowed is left, so it degrades too.
        after = await collect(router.run_turn(session, text_turn()))
    assert seen.routed == [victim.id] and outside.id not in seen.routed
    d = seen.degraded
    assert d is not None and d.tried == (victim.id,) and d.reason == "no_region_available"
    assert d.transcript == text_turn().text
    # Whatever text arrived without its audio is handed over for the edge to speak.
    assert d.unvoiced_text == seen.text[victim.id][len(seen.clauses[victim.id][0]) :].strip() or (
        words(d.unvoiced_text) == words(seen.text[victim.id])[len(words(seen.clauses[victim.id][0])) :]
    )
    assert outside.id not in after.routed and after.degraded is not None and after.done is None


async def test_closing_the_stream_cancels_the_region_turn_and_reuses_the_connection(
    region_factory: RegionFactory,
) -> None:
    region = region_factory("rt-survivor")
    registry = Registry(regions=[record(region, NEAR)])
    async with Router(RouterSettings(location=EDGE, probe_interval_s=60), registry=registry) as router:
        stream = router.run_turn(SessionRouting("s-cancel"), text_turn())
        async for ev in stream:
            if isinstance(ev, ClauseAudio):
                break
        await stream.aclose()  # barge-in
        for _ in range(600):  # a guard only: the drain ends with the region's turn.done
            if router.cancelled["drained"] or router.cancelled["dropped"]:
                break
            await asyncio.sleep(0.05)
        assert router.cancelled == {"drained": 1, "dropped": 0}
        assert not router.pool._tasks, "a drain task leaked"
        handshakes = dict(router.pool.handshakes)
        again = await collect(router.run_turn(SessionRouting("s-cancel"), text_turn(max_tokens=20)))
        assert again.done is not None and again.done.status == "completed"
        assert router.pool.handshakes == handshakes  # the drained connection served it
        assert isinstance(again.events[0][1], Routed)


async def test_busy_region_fails_over_at_once_without_tripping_its_breaker(
    region_factory: RegionFactory,
) -> None:
    small = region_factory("rt-small", max_concurrent=1, max_queue=0)
    other = region_factory("rt-survivor")
    registry = Registry(regions=[record(small, NEAR), record(other, FAR)])
    async with Router(RouterSettings(location=EDGE, probe_interval_s=60), registry=registry) as router:
        holder = router.run_turn(SessionRouting("s-hold"), text_turn())
        async for ev in holder:
            if isinstance(ev, TurnAdmitted):
                break  # the region's only slot is taken
        try:
            seen = await collect(router.run_turn(SessionRouting("s-busy"), text_turn(max_tokens=20)))
        finally:
            await holder.aclose()
        assert router.breakers.known_state(small.id) == "closed"
        assert router.breakers.breaker(small.id).fail_counter == 0
    assert seen.routed == [small.id, other.id]
    assert seen.failovers[0].reason == "busy"  # the region said so: no deadline was waited out
    assert seen.done is not None and seen.done.status == "completed" and seen.done.region == other.id
