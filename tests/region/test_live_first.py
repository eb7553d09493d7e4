"""Live turns first (issue 16): a speech batch's items (``priority: "batch"``) run only on what live
turns leave idle, and give way at once when one arrives (``region.live_first``).

``LiveFirst`` and ``Admission`` on their own, then whole turns through a real ``TurnSession``
(``region.testing``: real protocol frames, no socket) and a region served on loopback for
``/health`` and ``/metrics``. The models are stand-ins (``FixedTranscript``, ``ScriptedLlm``,
``ToneTts``): they are not under test here, what the region does around them is (which turn
synthesises when, which clause is said again, admission). A ``Hold`` keeps a stand-in busy until the
test lets it go, so nothing depends on how fast this machine is; waits are for conditions, bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
import pytest

from region.admission import Admission
from region.cancel import CancelToken
from region.live_first import RETRY_AFTER_S, LiveFirst
from region.settings import AdmissionSettings
from region.testing import (
    Hold,
    MemoryChannel,
    ScriptedLlm,
    ThreadedTts,
    ToneTts,
    open_session,
    run_frames,
    standin_node,
)
from tests.region.helpers import SECOND, start
from tests.region.test_auth import serving
from tests.region.test_session_turns import done_of, of
from voicemesh.cli.region import region_settings
from wire.client import run_turn
from wire.errors import RegionBusy
from wire.text import split_clauses
from wire.turn import (
    AudioClause,
    TextDelta,
    TurnAdmitted,
    TurnCancel,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    TurnStart,
    encode,
)

GUARD_S = 30.0
"""Only against a hang: a correct region never comes near it."""

TEXT = "The first sentence is here. The second one follows it. And the third ends it."
"""A batch item: three clauses."""
REPLY = "Sunny and warm today, with a light breeze. Take a hat if you go out."
"""A live turn's answer (no clause of it is in ``TEXT``)."""


async def until(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds (the turn tasks run meanwhile); bounded."""
    async with asyncio.timeout(GUARD_S):
        while not condition():  # noqa: ASYNC110 - counters (the gate's, a stand-in's) have no event
            await asyncio.sleep(0.005)


async def settle() -> None:
    """Let every ready task run a step or two (no time passes: nothing here is timed)."""
    for _ in range(20):
        await asyncio.sleep(0)


def batch(turn_id: str, text: str = TEXT) -> str:
    return start(turn_id, speak_text=text, priority="batch")


def said(channel: MemoryChannel) -> list[tuple[int, str]]:
    """``(index, text)`` of every clause a session was sent, in order."""
    return [(m.index, m.text) for m in of(AudioClause, channel.sent)]


# -- LiveFirst and Admission on their own -----------------------------------------------------------


async def test_batch_turns_beyond_max_batch_are_refused_at_once_with_a_retry_after() -> None:
    gate = LiveFirst(1, region="r")
    async with gate.batch_turn():
        with pytest.raises(RegionBusy) as busy:
            async with gate.batch_turn():
                pass
        assert gate.batch == 1
    assert busy.value.code == "busy" and busy.value.retry_after_s == RETRY_AFTER_S
    assert busy.value.region == "r" and gate.batch == 0
    with pytest.raises(RegionBusy):  # max_batch 0: no batch work at all
        async with LiveFirst(0).batch_turn():
            pass
    with pytest.raises(ValueError, match="max_batch"):
        LiveFirst(-1)


async def test_a_batch_turn_takes_no_slot_and_a_live_one_is_admitted_beside_it_at_once() -> None:
    adm = Admission(max_concurrent=1, max_queue=0, max_batch=1)
    reports: list[int] = []

    async def on_queued(position: int, wait_s: float) -> None:
        reports.append(position)

    async with adm.slot(on_queued, "batch") as batch_slot:
        assert (adm.active, adm.free_slots, adm.live_first.batch, batch_slot.queued_s) == (0, 1, 1, 0.0)
        async with adm.slot(on_queued, "normal") as live_slot:  # no queue at all: busy if it had to wait
            assert (adm.active, adm.live_first.live, live_slot.queued_s) == (1, 1, 0.0)
        with pytest.raises(RegionBusy):
            async with adm.slot(on_queued, "batch"):
                pass
    assert reports == [] and (adm.active, adm.live_first.batch, adm.live_first.live) == (0, 0, 0)


async def test_queued_live_turns_hold_batch_work_back_too() -> None:
    adm = Admission(max_concurrent=1, max_queue=1)
    gate = adm.live_first
    first_may_end, second_admitted = asyncio.Event(), asyncio.Event()

    async def live(may_end: asyncio.Event | None, admitted: asyncio.Event | None) -> None:
        async with adm.slot(lambda p, w: asyncio.sleep(0)):
            if admitted is not None:
                admitted.set()
            if may_end is not None:
                await may_end.wait()

    first = asyncio.create_task(live(first_may_end, None))
    await until(lambda: adm.active == 1)
    second = asyncio.create_task(live(asyncio.Event(), second_admitted))  # never ends by itself
    await until(lambda: adm.queued == 1)
    waiter = asyncio.create_task(gate.idle())
    first_may_end.set()
    await second_admitted.wait()
    await settle()
    assert not waiter.done() and gate.live == 1  # the queued turn now runs: batch still waits
    second.cancel()
    await asyncio.wait_for(waiter, GUARD_S)
    await first
    assert gate.live == 0 and second.cancelled()


async def test_idle_waits_on_when_a_live_turn_comes_before_the_waiter_runs() -> None:
    gate = LiveFirst(1)
    with gate.live_turn():
        waiter = asyncio.create_task(gate.idle())
        await settle()
    # Idle for an instant: a live turn arrives before the waiting batch clause has run.
    with gate.live_turn():
        await settle()
        assert not waiter.done(), "a batch clause would start beside a live turn"
    await asyncio.wait_for(waiter, GUARD_S)


async def test_a_live_turn_cancels_the_batch_clause_in_synthesis() -> None:
    gate = LiveFirst(1)
    token = CancelToken()
    with gate.preempting(token):
        assert not token.cancelled
        with gate.live_turn():
            assert token.cancelled and gate.preemptions == 1
            late = CancelToken()
            with gate.preempting(late):  # started while a live turn runs: stopped before it begins
                assert late.cancelled
    assert gate.preemptions == 1  # only a clause stopped mid-synthesis is a preemption
    with gate.live_turn():
        pass
    assert gate.preemptions == 1  # a finished clause is out of reach


# -- whole turns through a TurnSession --------------------------------------------------------------


async def test_a_batch_turn_is_refused_at_once_when_max_batch_run() -> None:
    hold = Hold()
    node = standin_node(tts=ToneTts(hold=hold), admission=AdmissionSettings(max_batch=1))
    async with open_session(node) as first, open_session(node) as second:
        first.push(batch("b1"))
        await hold.reached.wait()  # b1 is reading its first clause
        second.push(batch("b2"))
        (rejected,) = of(TurnRejected, await second.wait_for(TurnRejected))
        assert (rejected.turn_id, rejected.code, rejected.retry_after_s) == ("b2", "busy", RETRY_AFTER_S)
        assert not of(TurnQueued, second.sent) and not of(TurnAdmitted, second.sent)  # never queued
        hold.release()
        assert done_of(await first.wait_for(TurnDone)).status == "completed"
        second.push(batch("b3"))  # the slot is free again
        assert done_of(await second.wait_for(TurnDone)).status == "completed"
    assert node.admission.live_first.batch == 0

    refusing = standin_node(admission=AdmissionSettings(max_batch=0))
    sent = await run_frames(refusing, [batch("b")], until=TurnRejected)
    (rejected,) = of(TurnRejected, sent)
    assert rejected.retry_after_s == RETRY_AFTER_S and "no room for batch work" in rejected.message


async def test_batch_clauses_wait_for_a_live_turn_then_are_all_said_in_order_once() -> None:
    hold = Hold()
    tts = ToneTts()
    node = standin_node(llm=ScriptedLlm(REPLY, hold=hold, hold_at=1), tts=tts)
    async with open_session(node) as live, open_session(node) as bulk:
        live.push(start("live", text="Weather?"))
        await hold.reached.wait()  # the live turn is writing its answer
        bulk.push(batch("b"))
        await bulk.wait_for(TextDelta)  # admitted, its text announced: now at its first clause
        await settle()
        assert tts.asked == [] and node.admission.live_first.batch == 1
        hold.release()
        live_done = done_of(await live.wait_for(TurnDone))
        bulk_done = done_of(await bulk.wait_for(TurnDone))
    live_clauses = [text for _, text in said(live)]
    assert live_done.status == bulk_done.status == "completed" and live_clauses
    assert said(bulk) == list(enumerate(split_clauses(TEXT)))  # each clause once, in order, indexed
    assert sum(isinstance(m, bytes) for m in bulk.sent) == 3
    # Nothing of the batch was synthesised while the live turn ran, though the batch was there first.
    assert tts.spoken == tts.asked == live_clauses + split_clauses(TEXT)
    assert node.admission.live_first.preemptions == 0


async def test_a_live_turn_arriving_mid_clause_stops_it_and_the_clause_is_said_again_whole() -> None:
    hold = Hold()
    tts = ToneTts(hold=hold)  # every clause takes until released, unless its token is cancelled
    node = standin_node(llm=ScriptedLlm(REPLY), tts=tts)
    gate = node.admission.live_first
    first, *rest = split_clauses(TEXT)
    async with open_session(node) as bulk, open_session(node) as live:
        bulk.push(batch("b"))
        await hold.reached.wait()
        assert tts.asked == [first] and tts.running == 1

        live.push(start("live", text="Weather?"))
        await until(lambda: gate.preemptions == 1)  # the batch clause's synthesis was stopped...
        (admitted,) = of(TurnAdmitted, await live.wait_for(TurnAdmitted))
        assert admitted.queued_s == 0.0  # ...and the live turn went straight in
        await until(lambda: len(tts.asked) == 2)  # the live turn's first clause is being synthesised
        assert tts.spoken == [] and not of(AudioClause, bulk.sent)
        hold.release()
        live_done = done_of(await live.wait_for(TurnDone))
        bulk_done = done_of(await bulk.wait_for(TurnDone))
    live_clauses = [text for _, text in said(live)]
    assert live_done.status == bulk_done.status == "completed"
    assert said(bulk) == list(enumerate(split_clauses(TEXT)))  # the stopped clause whole, once
    assert tts.spoken == [*live_clauses, first, *rest]
    assert tts.asked == [first, *live_clauses, first, *rest]  # asked twice, said once
    assert gate.preemptions == 1
    assert "voicemesh_region_batch_preemptions_total 1.0" in node.metrics.render().decode()


async def test_a_live_turn_stops_a_batch_clause_inside_its_synthesis_thread() -> None:
    tts = ThreadedTts()  # a clause runs in a worker thread until ``go``; only RunOptions reach it
    node = standin_node(llm=ScriptedLlm(REPLY), tts=tts)
    gate = node.admission.live_first
    async with open_session(node) as bulk, open_session(node) as live:
        try:
            bulk.push(batch("b"))
            await tts.entered.wait()
            live.push(start("live", text="Weather?"))
            await until(lambda: gate.preemptions == 1 and len(tts.asked) == 2)  # the live clause's now
        finally:
            tts.go.set()  # (a failed wait must not leave a thread waiting)
        live_done = done_of(await live.wait_for(TurnDone))
        bulk_done = done_of(await bulk.wait_for(TurnDone))
    live_clauses = [text for _, text in said(live)]
    assert live_done.status == bulk_done.status == "completed"
    assert said(bulk) == list(enumerate(split_clauses(TEXT)))
    assert tts.spoken == live_clauses + split_clauses(TEXT) and tts.asked[0] == split_clauses(TEXT)[0]
    assert tts.in_thread == 0


async def test_cancelling_a_batch_turn_mid_clause_stops_its_thread_before_turn_done() -> None:
    tts = ThreadedTts()
    tts.POLL_S = 0.05  # the thread notices late (a slow graph node): turn.done must still wait for it
    node = standin_node(tts=tts)
    async with open_session(node) as bulk:
        try:
            bulk.push(batch("b"))
            await tts.entered.wait()
            bulk.push(encode(TurnCancel(turn_id="b")))
            done = done_of(await bulk.wait_for(TurnDone))
            assert tts.in_thread == 0, "the clause's synthesis outlived its turn"
        finally:
            tts.go.set()
    assert (done.status, tts.spoken, node.admission.live_first.batch) == ("cancelled", [], 0)


async def test_a_batch_turn_never_takes_the_only_live_slot() -> None:
    hold = Hold()
    node = standin_node(
        llm=ScriptedLlm(REPLY),
        tts=ToneTts(hold=hold),
        admission=AdmissionSettings(max_concurrent=1, max_queue=0),
    )
    async with open_session(node) as bulk, open_session(node) as live:
        bulk.push(batch("b"))
        await hold.reached.wait()
        _, health = node.health()
        assert (health["active"], health["free_slots"], health["batch"]) == (0, 1, {"running": 1, "max": 1})
        assert health["running"] == {"stt": 0, "llm": 0, "end_of_turn": 0, "tts": 0, "batch": 1}

        live.push(start("live", text="Weather?"))
        await until(lambda: bool(of(TurnAdmitted, live.sent) or of(TurnRejected, live.sent)))
        assert of(TurnRejected, live.sent) == [] and of(TurnAdmitted, live.sent)[0].queued_s == 0.0
        hold.release()
        assert done_of(await live.wait_for(TurnDone)).status == "completed"
        assert done_of(await bulk.wait_for(TurnDone)).status == "completed"
    assert said(bulk) == list(enumerate(split_clauses(TEXT)))


async def test_cancelling_a_batch_turn_while_it_waits_ends_it_cleanly() -> None:
    hold = Hold()
    tts = ToneTts()
    node = standin_node(llm=ScriptedLlm(REPLY, hold=hold, hold_at=1), tts=tts)
    gate = node.admission.live_first
    async with open_session(node) as live, open_session(node) as bulk:
        live.push(start("live", text="Weather?"))
        await hold.reached.wait()
        bulk.push(batch("b"))
        await bulk.wait_for(TextDelta)
        await settle()  # waiting for the live turn to end

        bulk.push(encode(TurnCancel(turn_id="b")))
        done = done_of(await bulk.wait_for(TurnDone))
        assert (done.turn_id, done.status) == ("b", "cancelled")
        assert gate.batch == 0 and tts.asked == []
        assert not [t for t in asyncio.all_tasks() if t.get_name() == "turn b"], (
            "the batch turn's task lives on"
        )

        hold.release()
        assert done_of(await live.wait_for(TurnDone)).status == "completed"
        await settle()
        assert not of(AudioClause, bulk.sent)  # nothing of the cancelled turn, ever

        bulk.push(batch("b2", "One more."))  # the connection and the batch slot are usable again
        sent = await bulk.wait_for(TurnDone, count=2)
    assert [(d.turn_id, d.status) for d in of(TurnDone, sent)] == [("b", "cancelled"), ("b2", "completed")]
    assert tts.spoken == [text for _, text in said(live)] + ["One more."]
    assert gate.batch == 0 and gate.live == 0


async def test_priority_batch_on_a_turn_that_is_not_speak_text_is_refused() -> None:
    tts = ToneTts()
    node = standin_node(tts=tts)
    sent = await run_frames(node, [start("t", text="Hi.", priority="batch")], until=TurnError)
    (error,) = of(TurnError, sent)
    assert (error.code, error.turn_id) == ("invalid_event", "t") and "speak_text" in error.message

    # An audio turn: refused at its turn.start, its audio frame dropped quietly, the session goes on.
    frames = [start("a", audio_bytes=len(SECOND), priority="batch"), SECOND, batch("ok", "Fine.")]
    sent = await run_frames(node, frames, until=TurnDone)
    assert [(e.code, e.turn_id) for e in of(TurnError, sent)] == [("invalid_event", "a")]
    assert done_of(sent).turn_id == "ok" and tts.spoken == ["Fine."]


# -- what operators see -----------------------------------------------------------------------------


async def test_health_and_metrics_show_the_batch_turns_over_http() -> None:
    hold = Hold()
    node = standin_node(
        llm=ScriptedLlm(REPLY), tts=ToneTts(hold=hold), admission=AdmissionSettings(max_batch=2)
    )
    async with serving(None, node=node) as url, httpx.AsyncClient(base_url=url, timeout=GUARD_S) as http:
        assert (await http.get("/health")).json()["batch"] == {"running": 0, "max": 2}

        item = asyncio.create_task(run_turn(url, TurnStart(turn_id="b", speak_text=TEXT, priority="batch")))
        await hold.reached.wait()
        assert (await http.get("/health")).json()["batch"] == {"running": 1, "max": 2}
        metrics = (await http.get("/metrics")).text
        assert "voicemesh_region_batch_turns 1.0" in metrics
        assert "voicemesh_region_batch_preemptions_total 0.0" in metrics

        caller = asyncio.create_task(run_turn(url, TurnStart(turn_id="live", text="Weather?")))
        await until(lambda: node.admission.live_first.preemptions == 1)
        hold.release()
        live, bulk = await asyncio.wait_for(asyncio.gather(caller, item), GUARD_S)
        assert live.status == bulk.status == "completed" and bulk.clauses == split_clauses(TEXT)
        metrics = (await http.get("/metrics")).text
        assert "voicemesh_region_batch_turns 0.0" in metrics
        assert "voicemesh_region_batch_preemptions_total 1.0" in metrics
        assert (await http.get("/health")).json()["batch"] == {"running": 0, "max": 2}


def test_max_batch_reaches_the_region_settings() -> None:
    assert region_settings("r", max_batch=0).admission.max_batch == 0
    assert region_settings("r").admission.max_batch == AdmissionSettings().max_batch == 1
