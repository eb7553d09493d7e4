"""A transcribe-only turn read to its end: what every transcription at the edge needs from the router.

``run_transcription`` consumes a router stream of a ``TurnStart.transcribe_only`` turn and keeps
what it ended with: the region's ``Transcript`` (with its timed segments), or why there is none (a
``Degraded``: no region left, and the edge runs no STT of its own; a ``ClientRefused``: the audio
or the request was at fault). ``POST /v1/audio/transcriptions`` and the Realtime input transcription
(``edge/realtime/transcription.py``) use it, and book the turn with ``book_transcription``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.usage import UsageDelta
from router.api import ClientRefused, Degraded, Routed, RoutedEvent
from wire.turn import Transcript


@dataclass
class TranscriptionResult:
    transcript: Transcript | None = None
    degraded: Degraded | None = None
    refused: ClientRefused | None = None
    region: str = ""
    """The region whose transcript it is (``""``: none)."""


async def run_transcription(
    events: AsyncIterator[RoutedEvent], see: Callable[[RoutedEvent], None] | None = None
) -> TranscriptionResult:
    """Read ``events`` to the end (so the router counts the turn as served), calling ``see`` on each
    (an audit trail); the stream is closed however this ends."""
    result = TranscriptionResult()
    try:
        async for ev in events:
            if see is not None:
                see(ev)
            if isinstance(ev, Transcript):
                result.transcript = ev
            elif isinstance(ev, Degraded):
                result.degraded = ev
            elif isinstance(ev, ClientRefused):
                result.refused = ev
            elif isinstance(ev, Routed):
                result.region = ev.region
    finally:
        with contextlib.suppress(Exception):
            await events.aclose()  # type: ignore[attr-defined]
    return result


async def book_transcription(
    accounting: Accounting, trail: TurnTrail, *, key_id: str, session_id: str, turn_id: str,
    residency: list[str] | None, status: str, audio_in_bytes: int,
) -> None:  # fmt: skip
    """A transcription turn's audit record and usage (Realtime input transcription and
    ``POST /v1/audio/transcriptions`` alike). ``status``: ``completed`` (a transcript, or the edge's
    own voice answered), ``failed`` or ``cancelled``."""
    if trail.degraded is not None:
        trail.left_for(NOWHERE)  # the edge has no STT of its own
    outcome, reason = trail.outcome(status)
    if status == "failed" and trail.refused is None:
        reason = trail.degraded.reason if trail.degraded is not None else "transcription_failed"
    record = AuditRecord(
        at=now(), key_id=key_id, session_id=session_id, turn_id=turn_id, kind="transcription",
        residency=residency, regions=trail.regions, failovers=trail.hops, outcome=outcome, reason=reason,
    )  # fmt: skip
    await accounting.book(record, UsageDelta.of(audio_in_bytes=audio_in_bytes, audio_out_bytes=0))
