"""Fifty client errors in a row (text over the limit, an unknown voice, max tokens vLLM refuses),
against real regions, while another session talks: no breaker opens, nothing fails over, and the
other session keeps being answered by a region (issue 11: three 4,001-character messages once
opened every region's breaker and sent everyone to the apology).

Real region processes (Whisper, vLLM, Kokoro) on loopback; the scripted-region version of the same
paths is ``test_client_errors.py``. Nothing here asserts on time.
"""

from __future__ import annotations

import asyncio

from router.api import ClientRefused, SessionRouting
from router.core import Router
from router.registry import Registry
from router.settings import RouterSettings
from tests.fixtures.region import RegionFactory, RunningRegion
from tests.router.conftest import EDGE, FAR, NEAR, Seen, collect, record, text_turn
from wire.turn import TurnStart

BAD_TURNS = 50
GUARD_S = 600.0
"""Only against a hang: fifty refusals and a few short answers on a busy 2-core machine."""


KINDS = ("text_too_long", "unknown_voice", "llm_refused")


def bad_turn(i: int) -> TurnStart:
    """In turn: a text over the region's 4,000-character limit, a voice no region has, and a max
    tokens vLLM refuses (HTTP 400: over the model's context)."""
    kind = KINDS[i % len(KINDS)]
    if kind == "text_too_long":
        return TurnStart(turn_id=f"long-{i}", text="x" * 4001)
    if kind == "unknown_voice":
        return TurnStart(turn_id=f"voice-{i}", text="Hello.", voice="af_nobody")
    return TurnStart(turn_id=f"tokens-{i}", text="Hello.", max_output_tokens=10**8)


async def test_fifty_client_errors_leave_every_breaker_closed_while_another_session_is_served(
    region: RunningRegion, region_factory: RegionFactory
) -> None:
    other = region_factory("rt-survivor")
    registry = Registry(regions=[record(region, NEAR), record(other, FAR)])
    refused: list[Seen] = []
    served: list[Seen] = []
    bad_done = asyncio.Event()

    async with Router(RouterSettings(location=EDGE, probe_interval_s=0.5), registry=registry) as router:

        async def bad_client() -> None:
            for i in range(BAD_TURNS):
                refused.append(await collect(router.run_turn(SessionRouting("bad"), bad_turn(i))))
            bad_done.set()

        async def good_client() -> None:
            while not bad_done.is_set() or len(served) < 2:
                turn = text_turn("Say hello in five words.", max_tokens=16)
                served.append(await collect(router.run_turn(SessionRouting("good"), turn)))

        async with asyncio.timeout(GUARD_S):
            await asyncio.gather(bad_client(), good_client())
        status = router.status()

    for i, seen in enumerate(refused):
        outcome = seen.events[-1][1]
        assert isinstance(outcome, ClientRefused), (i, outcome)
        assert outcome.code == KINDS[i % len(KINDS)] and outcome.message, outcome
        assert len(seen.routed) == 1 and not seen.failovers and seen.degraded is None
    breakers = {r["id"]: r["breaker"] for r in status["regions"]}  # type: ignore[index, union-attr]
    assert set(breakers) == {region.id, other.id}
    for rid, breaker in breakers.items():
        assert breaker["state"] == "closed" and breaker["fail_counter"] == 0, (rid, breaker)
    assert status["degraded_turns"] == 0 and status["recent_failovers"] == []
    for seen in served:
        assert seen.degraded is None and seen.done is not None and seen.done.status == "completed"
        assert seen.done.region in (region.id, other.id) and seen.clauses, "not voiced by a region"
