"""A speech batch's items through the router (issue 16): ``priority: "batch"`` turns wait for every
live turn on their region (``region.live_first``), so the router must not read their pace as the
region's. A batch item's ``busy`` does not spend the live turns' retry budget; its attempt feeds no
latency average (first byte, time to first audio, clause pace, turn length); a pause of a batch item
is not taken for a hang.

Against scripted stand-in regions (``router.testing``: real loopback WebSockets, the real router):
no model is under test here, what the router does with a region's answers is. Each test has a live
turn beside the batch one on the same set-up, so it shows the difference, not just a quiet router.
"""

from __future__ import annotations

import asyncio

from prometheus_client import REGISTRY

from router.api import SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from router.testing import Admit, Done, Hang, Reject, Script, ScriptedRegion, Step, answer, speak
from tests.router.conftest import EDGE, FAR, NEAR, Seen, collect
from wire.turn import TurnStart

GUARD_S = 60.0
"""Only against a hang: a correct router never comes near it."""


def settings(**kw: object) -> RouterSettings:
    return RouterSettings(location=EDGE, probe_interval_s=0, **kw)  # type: ignore[arg-type]


def item(turn_id: str) -> TurnStart:
    return TurnStart(turn_id=turn_id, speak_text="One. Two.", priority="batch")


def live(turn_id: str) -> TurnStart:
    return TurnStart(turn_id=turn_id, speak_text="One. Two.")


async def run(router: Router, session: str, start: TurnStart) -> Seen:
    async with asyncio.timeout(GUARD_S):
        return await collect(router.run_turn(SessionRouting(session), start))


def ttfa_count(region: str) -> float:
    return REGISTRY.get_sample_value("voicemesh_router_ttfa_seconds_count", {"region": region}) or 0.0


async def test_a_batch_items_busy_answer_spends_no_retry_budget() -> None:
    busy_for_all: Script = lambda _start: [Reject()]  # noqa: E731 (its batch slots and live slots full)
    async with (
        ScriptedRegion("batch-full", busy_for_all) as full,
        ScriptedRegion("batch-free", answer("One.", "Two.")) as free,
    ):
        registry = Registry(regions=[full.record(NEAR), free.record(FAR)])
        no_budget = settings(retry_budget_burst=0.0, retry_budget_per_s=0.0)
        async with Router(no_budget, registry=registry) as router:
            batch_seen = await run(router, "batch", item("b"))
            assert router.budget.refused == 0
            live_seen = await run(router, "live", live("l"))
            refused = router.budget.refused
    assert batch_seen.routed == [full.id, free.id] and batch_seen.done is not None
    assert batch_seen.failovers[0].reason == "busy"
    # The same failover for a live turn needs a token, and there is none.
    assert live_seen.routed == [full.id] and live_seen.degraded is not None
    assert live_seen.degraded.reason == "retry_budget_exhausted" and refused == 1


async def test_a_batch_attempt_feeds_none_of_the_regions_latency_averages() -> None:
    async with ScriptedRegion("batch-ewma", answer("One.", "Two.", "Three.")) as only:
        async with Router(settings(), registry=Registry(regions=[only.record(NEAR)])) as router:
            health = router.regions[only.id]
            before = ttfa_count(only.id)
            seen = await run(router, "s", item("b"))
            assert seen.done is not None and seen.clauses[only.id] == ["One.", "Two.", "Three."]
            averages = (health.first_byte, health.ttfa, health.synth_s_per_char, health.turn_duration)
            assert [a.value for a in averages] == [None, None, None, None]
            assert ttfa_count(only.id) == before

            await run(router, "s", live("l"))  # a live turn on the same region does feed them
            assert all(a.value is not None for a in averages)
            assert ttfa_count(only.id) == before + 1


async def test_a_batch_item_pausing_for_live_turns_is_not_taken_for_a_hang() -> None:
    """The region pauses mid-item (a live turn came) for twice the stall deadline, a sleep that never
    ends early: a live turn would move on, the batch item waits and ends where it began."""
    go = asyncio.Event()

    def pauses(start: TurnStart) -> list[Step]:
        resume = go if start.priority == "batch" else asyncio.Event()  # the live turn's never resumes
        return [Admit(), *speak("One."), Hang(resume), *speak("Two."), Done()]

    async with (
        ScriptedRegion("batch-pausing", pauses) as pausing,
        ScriptedRegion("batch-spare", answer("One.", "Two.")) as spare,
    ):
        registry = Registry(regions=[pausing.record(NEAR), spare.record(FAR)])
        short = settings(
            first_byte_floor_s=0.2, first_audio_floor_s=0.2, stall_floor_s=0.2, synth_s_per_char_prior=0.001
        )
        async with Router(short, registry=registry) as router:
            batch = asyncio.create_task(run(router, "batch", item("b")))
            await asyncio.wait_for(pausing.hanging.wait(), GUARD_S)
            await asyncio.sleep(2 * router.regions[pausing.id].stall_deadline_s(len("Two.")))
            assert not batch.done()
            go.set()
            batch_seen = await batch
            # The same pause in a live turn (after the batch: a failover penalises the region).
            live_seen = await run(router, "live", live("l"))
    assert batch_seen.routed == [pausing.id] and not batch_seen.failovers
    assert batch_seen.clauses[pausing.id] == ["One.", "Two."] and batch_seen.done is not None
    assert live_seen.routed == [pausing.id, spare.id]  # the deadline is real
    assert live_seen.failovers[0].reason == "first_byte_timeout"
