"""A Realtime response's trail: the router's events as the response relays them, noted on the way
(regions, failovers, audio out: ``edge/tenancy/audit.py``'s ``TurnTrail``), and the finished
response booked from it (audit record and usage, ``edge/tenancy/accounting.py``).

A degraded turn of a key whose ``on_no_region`` is ``error`` ends in that error instead of the
edge's voice (``edge/tenancy/session_tenancy.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from edge.responses.response import Response, ResponseResult
from edge.shared.state import SessionState
from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import EDGE, NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.session_tenancy import refusal_for
from edge.tenancy.usage import UsageDelta
from router.api import Degraded, RoutedEvent
from wire.turn import Transcript, TurnStart


async def watched(
    events: AsyncIterator[RoutedEvent], state: SessionState, start: TurnStart, trail: TurnTrail
) -> AsyncGenerator[RoutedEvent, None]:
    """The router's stream as the response relays it, noted in ``trail``; a degraded turn of a
    key whose ``on_no_region`` is ``error`` ends in that error instead of the edge's voice."""
    try:
        async for ev in events:
            trail.see(ev)
            if not isinstance(ev, Degraded) or (refusal := refusal_for(state, ev)) is None:
                yield ev
                continue
            if ev.transcript:  # what the user said is still theirs to see
                yield Transcript(turn_id=start.turn_id, text=ev.transcript)
            trail.see(refusal)
            yield refusal
            return
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]


def book_response(
    accounting: Accounting, state: SessionState, response: Response, result: ResponseResult,
    start: TurnStart, trail: TurnTrail, audio_in: int,
) -> asyncio.Task[None]:  # fmt: skip
    """The finished response's audit record and usage, being booked."""
    if trail.degraded is not None:
        trail.left_for(NOWHERE if trail.refused is not None else EDGE)
    outcome, reason = trail.outcome(result.status, response.cancel_reason)
    record = AuditRecord(
        at=now(), key_id=state.key_id, session_id=state.id, turn_id=start.turn_id,
        response_id=response.id, residency=state.residency, regions=trail.regions,
        failovers=trail.hops, outcome=outcome, reason=reason,
    )  # fmt: skip
    tokens = (result.usage.get("input_tokens", 0), result.usage.get("output_tokens", 0))
    delta = UsageDelta.of(audio_in_bytes=audio_in, audio_out_bytes=trail.audio_out_bytes, tokens=tokens)
    return accounting.submit(record, delta)


__all__ = ["book_response", "watched"]
