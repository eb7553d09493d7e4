"""A transcribe-only turn read to its end: what every transcription at the edge needs from the router.

``run_transcription`` consumes a router stream of a ``TurnStart.transcribe_only`` turn and keeps
what it ended with: the region's ``Transcript`` (with its timed segments), or why there is none (a
``Degraded``: no region left, and the edge runs no STT of its own; a ``ClientRefused``: the audio
or the request was at fault). ``POST /v1/audio/transcriptions`` and the Realtime input transcription
(``edge/realtime/transcription.py``) use it, and book the turn with ``book_transcription``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from edge.tenancy.accounting import Accounting
from edge.tenancy.audit import NOWHERE, AuditRecord, TurnTrail, now
from edge.tenancy.usage import UsageDelta
from edge.turns.reader import TurnHandler, TurnReader
from router.api import ClientRefused, Degraded, Routed, RoutedEvent
from wire.turn import Transcript


@dataclass
class TranscriptionResult(TurnHandler):
    transcript: Transcript | None = None
    degraded: Degraded | None = None
    refused: ClientRefused | None = None
    region: str = ""
    """The region whose transcript it is (``""``: none)."""

    async def got_routed(self, ev: Routed) -> None:
        self.region = ev.region

    async def got_transcript(self, ev: Transcript) -> None:
        self.transcript = ev

    async def got_degraded(self, ev: Degraded) -> None:
        self.degraded = ev

    async def got_refused(self, ev: ClientRefused) -> None:
        self.refused = ev


async def run_transcription(
    events: AsyncIterator[RoutedEvent], trail: TurnTrail | None = None
) -> TranscriptionResult:
    """Read ``events`` to the turn's end (``edge/turns/reader.py``), noting it in ``trail`` (the
    audit's); the stream is closed however this ends."""
    result = TranscriptionResult()
    await TurnReader(events, trail=trail).run(result)
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
