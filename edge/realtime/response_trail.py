"""A finished Realtime response booked from its trail (the regions, failovers and audio out that
``edge/turns/reader.py`` noted in ``edge/tenancy/audit.py``'s ``TurnTrail``): its audit record and
usage (``edge/tenancy/accounting.py``).
"""

from __future__ import annotations

import asyncio

from edge.responses.response import Response, ResponseResult
from edge.shared.state import SessionState
from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import EDGE, NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.usage import UsageDelta
from wire.turn import TurnStart


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


__all__ = ["book_response"]
