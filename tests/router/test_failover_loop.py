"""The failover loop and the region attempt against scripted stand-in regions (``router.testing``).

No model is under test here: the stand-ins speak the real turn protocol over real loopback sockets,
and the router is the real one. Real regions (SIGKILL, SIGSTOP) are in ``test_failover.py``.
Nothing asserts on elapsed time; waits are for conditions, with a generous guard against a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import cast

from router.api import ClientRefused, Degraded, SessionRouting
from router.core import Router
from router.registry import Location, Registry
from router.settings import RouterSettings
from router.testing import (
    Admit,
    Crash,
    Done,
    Fail,
    Hang,
    Hear,
    Reject,
    Say,
    Script,
    ScriptedRegion,
    Step,
    answer,
    speak,
)
from tests.router.conftest import EDGE, FAR, NEAR, Seen, collect
from wire.client import ClauseAudio
from wire.turn import TurnStart

GUARD_S = 60.0
"""Only against a hang: a correct router never comes near it."""
LONG = {"first_byte_floor_s": 60.0, "first_audio_floor_s": 60.0, "stall_floor_s": 60.0}
"""Deadlines no test reaches: what must fail a turn over is something else."""


def settings(**kw: object) -> RouterSettings:
    return RouterSettings(location=EDGE, probe_interval_s=0, **kw)  # type: ignore[arg-type]


def registry(*regions: tuple[ScriptedRegion, Location]) -> Registry:
    return Registry(regions=[r.record(loc) for r, loc in regions])


async def eventually(cond: Callable[[], bool]) -> None:
    async with asyncio.timeout(GUARD_S):
        while True:
            if cond():
                return
            await asyncio.sleep(0.01)


def failover_entries(status: dict[str, object]) -> list[dict[str, object]]:
    """``status()["recent_failovers"]``, the JSON the ops page and drills read."""
    return cast(list[dict[str, object]], status["recent_failovers"])


async def run(router: Router, session: str, start: TurnStart, audio: bytes | None = None) -> Seen:
    async with asyncio.timeout(GUARD_S):
        return await collect(router.run_turn(SessionRouting(session), start, audio))


def crashes_after(*clauses: str, then: Sequence[Step] = ()) -> Script:
    return lambda _s: [Admit(), Hear(), *speak(*clauses), *then, Crash()]


async def test_crash_mid_answer_continues_elsewhere_from_the_transcript_after_what_was_heard() -> None:
    async with (
        ScriptedRegion("victim", crashes_after("Paris is big.", "It has a river.")) as victim,
        ScriptedRegion("survivor", answer("It is old too.")) as survivor,
    ):
        async with Router(settings(), registry=registry((victim, NEAR), (survivor, FAR))) as router:
            await eventually(lambda: router.pool.idle_count(survivor.id) >= 1)  # the warm runner-up
            start = TurnStart(turn_id="t-crash", max_output_tokens=60)
            seen = await run(router, "s", start, b"\0\0" * 1600)
            status = router.status()
    assert seen.routed == [victim.id, survivor.id]
    (fo,) = seen.failovers
    assert (fo.from_region, fo.to_region, fo.reason) == (victim.id, survivor.id, "region_disconnected")
    assert fo.heard_text == "Paris is big. It has a river." == " ".join(seen.clauses[victim.id])
    assert seen.clauses[survivor.id] == ["It is old too."]
    assert seen.done is not None and seen.done.region == survivor.id
    # The survivor got no audio (no second STT): the victim's transcript and what was heard.
    (first,), (second,) = victim.starts, survivor.starts
    assert first.audio_bytes > 0 and second.audio_bytes == 0
    assert second.transcript == seen.transcripts[victim.id] and second.heard_text == fo.heard_text
    (entry,) = failover_entries(status)
    assert entry["turn_id"] == "t-crash" and entry["reason"] == "region_disconnected"
    assert entry["heard_chars"] == len(fo.heard_text) and entry["gap_s"] is not None
    assert entry["warm_connection"] is True, "the failover paid a handshake"


async def test_silence_fails_over_at_the_first_byte_deadline() -> None:
    async with (
        ScriptedRegion("hung", lambda _s: [Hang()]) as hung,
        ScriptedRegion("survivor", answer("Fine.")) as survivor,
    ):
        async with Router(
            settings(first_byte_floor_s=0.5), registry=registry((hung, NEAR), (survivor, FAR))
        ) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-hang", text="hi"))
    assert seen.routed == [hung.id, survivor.id]
    assert seen.failovers[0].reason == "first_byte_timeout"
    assert seen.done is not None and seen.clauses[survivor.id] == ["Fine."]


async def test_the_last_region_left_gets_slack_instead_of_degrading() -> None:
    """Silent past its plain first-byte deadline (a sleep of twice it never ends early), well inside
    the stretched one: with nowhere to fail over to, a late answer beats the edge's apology."""
    go = asyncio.Event()
    async with ScriptedRegion(
        "only", lambda _s: [Hang(go), Admit(), Hear(), *speak("Late."), Done()]
    ) as only:
        cfg = settings(first_byte_floor_s=0.2, last_resort_slack=300.0)
        async with Router(cfg, registry=registry((only, NEAR))) as router:
            plain = router.regions[only.id].first_byte_deadline_s()
            turn = asyncio.create_task(run(router, "s", TurnStart(turn_id="t-slack", text="hi")))
            await asyncio.wait_for(only.hanging.wait(), GUARD_S)
            await asyncio.sleep(2 * plain)
            go.set()
            seen = await turn
    assert seen.degraded is None, seen.degraded
    assert seen.routed == [only.id] and seen.done is not None and seen.clauses[only.id] == ["Late."]


async def test_a_slow_handshake_fails_over_but_not_on_the_last_region_left() -> None:
    """A handshake twice the plain connect deadline (a region on a loaded machine): with a runner-up
    the turn goes there; alone, the region gets the last resort's slack and answers."""
    cfg = settings(first_byte_floor_s=0.2, last_resort_slack=300.0)
    plain = 2 * cfg.first_byte_floor_s  # before any probe the floor is the connect deadline
    async with (
        ScriptedRegion("slow", answer("Slow."), handshake_s=plain) as slow,
        ScriptedRegion("quick", answer("Quick.")) as quick,
    ):
        async with Router(cfg, registry=registry((slow, NEAR), (quick, FAR))) as router:
            assert router.regions[slow.id].connect_deadline_s() == cfg.first_byte_floor_s
            two = await run(router, "s", TurnStart(turn_id="t-two", text="hi"))
        async with Router(cfg, registry=registry((slow, NEAR))) as router:
            alone = await run(router, "s", TurnStart(turn_id="t-alone", text="hi"))
    assert two.routed == [slow.id, quick.id] and two.failovers[0].reason == "region_unavailable"
    assert two.done is not None and two.clauses[quick.id] == ["Quick."]
    assert alone.degraded is None, alone.degraded
    assert alone.routed == [slow.id] and alone.clauses[slow.id] == ["Slow."]


async def test_a_failed_probe_wakes_a_turn_waiting_on_a_hung_region() -> None:
    """The prober touches no turn: the attempt sees the region's signal and shortens its own wait."""
    async with (
        ScriptedRegion("hung", lambda _s: [Admit(), Hear(), *speak("One."), Hang()]) as hung,
        ScriptedRegion("survivor", answer("Two.")) as survivor,
    ):
        cfg = settings(hang_confirm_s=0.05, **LONG)
        async with Router(cfg, registry=registry((hung, NEAR), (survivor, FAR))) as router:
            turn = asyncio.create_task(run(router, "s", TurnStart(turn_id="t-probe", text="hi")))
            await asyncio.wait_for(hung.hanging.wait(), GUARD_S)
            hung.healthy = False
            await router.prober.probe(router.regions[hung.id])
            assert router.regions[hung.id].probe_ok is False
            seen = await turn
            status = router.status()
    assert seen.routed == [hung.id, survivor.id]
    assert seen.failovers[0].reason == "first_byte_timeout"
    assert seen.failovers[0].heard_text == "One."
    (entry,) = failover_entries(status)
    assert "after a failed health probe" in str(entry["detail"])


async def test_busy_fails_over_without_tripping_the_breaker() -> None:
    async with (
        ScriptedRegion("full", lambda _s: [Reject()]) as full,
        ScriptedRegion("other", answer("Hi.")) as other,
    ):
        async with Router(settings(), registry=registry((full, NEAR), (other, FAR))) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-busy", text="hi"))
            assert router.breakers.known_state(full.id) == "closed"
            assert router.breakers.breaker(full.id).fail_counter == 0
            assert router.regions[full.id].failures.value() == 0.0
            assert router.sticky.get("s") == other.id  # the next turn of the session starts there
    assert seen.routed == [full.id, other.id] and seen.failovers[0].reason == "busy"
    assert seen.done is not None and seen.done.region == other.id


async def test_region_turn_error_fails_over() -> None:
    async with (
        ScriptedRegion("flaky", lambda _s: [Admit(), Fail("model_error")]) as flaky,
        ScriptedRegion("other", answer("Hi.")) as other,
    ):
        async with Router(settings(), registry=registry((flaky, NEAR), (other, FAR))) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-err", text="hi"))
            assert router.breakers.breaker(flaky.id).fail_counter == 1
    assert seen.routed == [flaky.id, other.id] and seen.failovers[0].reason == "model_error"
    assert seen.done is not None


async def test_a_client_error_is_passed_on_not_failed_over() -> None:
    """Another region would refuse an unknown voice the same way."""
    async with (
        ScriptedRegion("strict", lambda _s: [Admit(), Fail("unknown_voice")]) as strict,
        ScriptedRegion("other", answer("Hi.")) as other,
    ):
        async with Router(settings(), registry=registry((strict, NEAR), (other, FAR))) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-voice", text="hi", voice="nobody"))
            assert router.breakers.breaker(strict.id).fail_counter == 0
            assert router.sticky.get("s") is None
    assert seen.routed == [strict.id] and not seen.failovers and seen.done is None and not other.starts
    last = seen.events[-1][1]
    assert isinstance(last, ClientRefused) and last.code == "unknown_voice"


async def test_a_failed_turn_done_fails_over() -> None:
    async with (
        ScriptedRegion("bad", lambda _s: [Admit(), Done(status="failed")]) as bad,
        ScriptedRegion("good", answer("Hi.")) as good,
    ):
        async with Router(settings(), registry=registry((bad, NEAR), (good, FAR))) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-failed", text="hi"))
    assert seen.failovers[0].reason == "turn_failed" and seen.done is not None


async def test_retry_limit_degrades_with_the_text_that_never_got_its_audio() -> None:
    async with (
        ScriptedRegion("a", lambda _s: [Admit(), Hear(), Crash()]) as a,
        ScriptedRegion("b", lambda _s: [Admit(), Hear(), *speak("One."), Say("Two. "), Crash()]) as b,
        ScriptedRegion("c", answer("never")) as c,
    ):
        reg = registry((a, NEAR), (b, NEAR), (c, FAR))
        async with Router(settings(max_attempts=2), registry=reg) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-limit", text="hi"))
            status = router.status()
    assert seen.routed == [a.id, b.id] and c.starts == []
    d = seen.degraded
    assert isinstance(d, Degraded) and d.reason == "retry_limit" and d.tried == (a.id, b.id)
    assert d.transcript == "hi" and d.unvoiced_text == "Two."
    assert status["degraded_turns"] == 1
    records = failover_entries(status)
    assert [(r["from"], r["to"], r["reason"]) for r in records] == [
        (a.id, b.id, "region_disconnected"),
        (b.id, None, "retry_limit"),
    ]


async def test_nothing_left_degrades() -> None:
    async with ScriptedRegion("only", lambda _s: [Admit(), Hear(), *speak("One."), Crash()]) as only:
        async with Router(settings(), registry=registry((only, NEAR))) as router:
            seen = await run(router, "s", TurnStart(turn_id="t-none", text="hi"))
            after = await run(router, "s", TurnStart(turn_id="t-after", text="hi"))
    d = seen.degraded
    assert d is not None and d.reason == "no_region_available" and d.tried == (only.id,)
    assert seen.failovers == [] and d.unvoiced_text == ""
    # Its breaker is still closed and it is still reachable: the next turn tries it again.
    assert after.routed == [only.id]


async def test_closing_the_stream_cancels_the_turn_and_drains_the_connection_for_reuse() -> None:
    release = asyncio.Event()
    async with ScriptedRegion("r", lambda _s: [Admit(), Hear(), *speak("One."), Hang(release)]) as region:
        async with Router(settings(), registry=registry((region, NEAR))) as router:
            stream = router.run_turn(SessionRouting("s"), TurnStart(turn_id="t-cancel", text="hi"))
            async for ev in stream:
                if isinstance(ev, ClauseAudio):
                    break
            await stream.aclose()  # barge-in
            await eventually(lambda: router.cancelled["drained"] == 1)
            assert router.cancelled == {"drained": 1, "dropped": 0}
            assert region.cancels == ["t-cancel"]
            await eventually(lambda: not router.pool._tasks)
            handshakes = dict(router.pool.handshakes)
            region.script = answer("Again.")
            again = await run(router, "s", TurnStart(turn_id="t-again", text="hi"))
            assert again.done is not None and again.done.status == "completed"
            assert router.pool.handshakes == handshakes  # the drained connection served it
            assert router.breakers.known_state(region.id) == "closed"


async def test_concurrent_turns_each_get_their_own_failover_gap() -> None:
    """Turn A fails over, then turn B does; A's next region speaks first. The gap is A's, written on
    A's record (it used to land on the newest record, B's). Gates order the steps: no clock."""
    crash = {"t-a": asyncio.Event(), "t-b": asyncio.Event()}
    speak_on = {"t-a": asyncio.Event(), "t-b": asyncio.Event()}

    def victim_script(s: TurnStart) -> list[Step]:
        return [Admit(), Hear(), *speak("First."), Hang(crash[s.turn_id]), Crash()]

    def survivor_script(s: TurnStart) -> list[Step]:
        return [Admit(), Hear(), Hang(speak_on[s.turn_id]), *speak("Next."), Done()]

    async with (
        ScriptedRegion("victim", victim_script) as victim,
        ScriptedRegion("survivor", survivor_script) as survivor,
    ):
        async with Router(settings(**LONG), registry=registry((victim, NEAR), (survivor, FAR))) as router:
            turn_a = asyncio.create_task(run(router, "sa", TurnStart(turn_id="t-a", text="hi")))
            turn_b = asyncio.create_task(run(router, "sb", TurnStart(turn_id="t-b", text="hi")))
            await eventually(lambda: len(victim.starts) == 2)
            crash["t-a"].set()
            await eventually(lambda: [s.turn_id for s in survivor.starts] == ["t-a"])
            crash["t-b"].set()
            await eventually(lambda: [s.turn_id for s in survivor.starts] == ["t-a", "t-b"])
            assert [r.turn_id for r in router.failovers] == ["t-a", "t-b"]
            assert all(r.gap_s is None for r in router.failovers)
            speak_on["t-a"].set()
            a = await turn_a
            records = {r.turn_id: r for r in router.failovers}
            assert records["t-a"].gap_s is not None and records["t-b"].gap_s is None
            speak_on["t-b"].set()
            b = await turn_b
            status = router.status()
    assert a.routed == b.routed == [victim.id, survivor.id]
    entries = failover_entries(status)
    assert [(e["turn_id"], e["session"]) for e in entries] == [("t-a", "sa"), ("t-b", "sb")]
    assert all(e["gap_s"] is not None for e in entries)
