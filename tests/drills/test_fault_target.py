"""Where a region fault lands: on the region serving the moment's turn while it still has a turn
running, or on a later answer's region (``DrillContext.serving_target``).

The regions' ``/health`` is a stand-in here: what is tested is the choice, not a region (the real
crash drill is ``test_region_crash_drill.py``)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.deployment import Deployment, RegionInfo
from voicemesh.drills.drill_context import DrillContext, FaultParams
from voicemesh.drills.faults import Undo
from voicemesh.drills.records import TurnRecord

EU, US = RegionInfo("eu-west", "http://127.0.0.1:1"), RegionInfo("us-east", "http://127.0.0.1:2")


class _Healths:
    """Each region's ``/health`` answers, in order (the last one repeats)."""

    def __init__(self, answers: dict[str, list[dict[str, Any] | None]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def region_health(self, region: RegionInfo, timeout_s: float = 1.5) -> dict[str, Any] | None:
        self.asked.append(region.id)
        queue = self.answers[region.id]
        return queue.pop(0) if len(queue) > 1 else queue[0]


def _context(healths: _Healths, **params: Any) -> DrillContext:
    ctx = DrillContext(
        cast(Deployment, healths), CallerState(), FaultParams(**params), Undo(), lambda _: None
    )
    ctx.regions = [EU, US]
    return ctx


def _turn(caller: int, turn: int, region: str) -> TurnRecord:
    rec = TurnRecord(caller, turn, f"sess-{caller}", "hello", "af_heart", speech_start=0.0)
    rec.regions.append(region)
    return rec


async def _emit_later(ctx: DrillContext, *moments: TurnRecord) -> None:
    for rec in moments:
        await asyncio.sleep(0.01)
        ctx.state.moments.emit("first_text", rec)


async def test_the_region_still_answering_is_the_target() -> None:
    healths = _Healths({"eu-west": [{"active": 1, "queue_depth": 0}], "us-east": [{"active": 0}]})
    ctx = _context(healths)
    emitter = asyncio.create_task(_emit_later(ctx, _turn(0, 2, "eu-west")))
    rec, region = await ctx.serving_target()
    await emitter
    assert (rec.caller, rec.turn, region.id) == (0, 2, "eu-west")
    assert ctx.notes == []


async def test_a_region_done_with_its_answer_waits_for_the_next_one() -> None:
    # caller 1's short answer was whole at eu-west before its first words were heard (the flake
    # seen in CI: the SIGKILL landed on an idle region, and no failover was there to record)
    healths = _Healths({"eu-west": [{"active": 0, "queue_depth": 0}], "us-east": [{"active": 1}]})
    ctx = _context(healths)
    emitter = asyncio.create_task(_emit_later(ctx, _turn(1, 2, "eu-west"), _turn(0, 2, "us-east")))
    rec, region = await ctx.serving_target()
    await emitter
    assert (rec.caller, rec.turn, region.id) == (0, 2, "us-east")
    assert len(ctx.notes) == 1 and "eu-west had already answered caller 1 turn 2" in ctx.notes[0]


async def test_retargeting_is_bounded() -> None:
    healths = _Healths({"eu-west": [{"active": 0}], "us-east": [{"active": 0}]})
    ctx = _context(healths, retargets=2, retarget_wait_s=0.05)
    emitter = asyncio.create_task(_emit_later(ctx, _turn(1, 2, "eu-west")))
    rec, region = await ctx.serving_target()  # no later answer comes: the fault lands anyway
    await emitter
    assert (rec.caller, region.id) == (1, "eu-west")
    assert len(ctx.notes) == 1


async def test_an_unanswering_region_is_hit_without_waiting() -> None:
    healths = _Healths({"eu-west": [None], "us-east": [{"active": 0}]})
    ctx = _context(healths)
    emitter = asyncio.create_task(_emit_later(ctx, _turn(0, 2, "eu-west")))
    _, region = await ctx.serving_target()
    await emitter
    assert region.id == "eu-west" and ctx.notes == []
