"""One region's try at one turn: send it, read it under its deadline, hand the connection back.

The attempt reads the region's events one at a time, each against its own deadline
(``router.deadlines``) and against the region's ``hang_suspected`` signal (set by a failed health
probe): whichever comes first, the attempt decides itself whether the region has gone quiet.
Failing raises a ``RegionError`` (the turn's failover loop, ``router.failover``, moves on); a
request the region refused as the client's fault raises its ``ProtocolError`` (no failover). Both
are decoded from the region's error code by ``wire.errors.decode_error``: the class says whose fault
it is. Where the connection goes afterwards is an explicit ``Disposition``.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import msgspec

from router import metrics
from router.api import RegionProgress
from router.continuation import TurnProgress
from router.deadlines import AttemptDeadline
from router.health import RegionHealth
from router.health_board import Latency
from router.pool import ConnectionPool
from wire.client import ClauseAudio, RegionConnection, RegionEvent
from wire.errors import RegionBusy, RegionDisconnected, RegionError, decode_error
from wire.turn import (
    TextDelta,
    ToolCalls,
    Transcript,
    TurnAdmitted,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    TurnStart,
)

log = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 2.0
"""How long a cancelled turn may take to reach its ``turn.done`` before its connection is closed."""


class Disposition(enum.Enum):
    """What happens to the attempt's connection when it ends."""

    DISCARD = "discard"
    """Its state is unknown (a failure, a read cut in half): close it."""
    RELEASE = "release"
    """The region ended the turn: the connection is clean, back to the pool."""
    DRAIN = "drain"
    """Cancelled between two reads: read on to the region's ``turn.done`` in the background, then
    back to the pool."""


class RegionAttempt:
    """One region's try at the turn, its deadlines stretched by ``slack``.

    Iterate ``events()``; afterwards ``done`` is the region's ``turn.done``, unless it raised.
    """

    def __init__(
        self,
        region: RegionHealth,
        start: TurnStart,
        audio: bytes | None,
        progress: TurnProgress,
        *,
        pool: ConnectionPool,
        cancelled: dict[str, int],
        slack: float = 1.0,
        hang_slack: float | None = None,
        learn: Callable[[Latency], None] | None = None,
    ) -> None:
        self.region = region
        self.progress = progress
        self.start, self.audio = self._request(start, audio)
        self._pool = pool
        self._cancelled = cancelled
        self.slack = slack
        self.hang_slack = hang_slack
        self.learn = learn
        """Where the answer's latencies are reported (``HealthBoard.measured``); ``None``: nowhere."""
        self.disposition = Disposition.DISCARD
        self.warm: bool | None = None
        """Whether the attempt ran on a pooled connection (no handshake on the turn's path)."""
        self.done: TurnDone | None = None
        self.called = False
        """The region's function calls were passed on: the answer is over, whatever happens next."""

    def _request(self, start: TurnStart, audio: bytes | None) -> tuple[TurnStart, bytes | None]:
        progress = self.progress
        if progress.transcript is not None:
            # Failing over (or the edge already knows the words): skip STT, continue after what
            # the user heard.
            start = msgspec.structs.replace(
                start, transcript=progress.transcript, heard_text=progress.heard_text
            )
            return start, None
        if progress.heard_text != start.heard_text:
            start = msgspec.structs.replace(start, heard_text=progress.heard_text)
        return start, audio

    async def events(self) -> AsyncGenerator[RegionProgress, None]:
        """The region's events up to (not including) its ``turn.done``. Raises a ``RegionError`` to
        fail over, a ``ProtocolError`` when the region refused the request."""
        region = self.region
        self.progress.new_attempt()
        loop = asyncio.get_running_loop()
        batch = self.start.is_batch
        # The router's ``connect`` and ``admission`` stages (router/metrics.py); a batch item's
        # waits say nothing of what live callers wait for.
        stages = None if batch else metrics.STAGE_SECONDS
        acquiring = loop.time()
        # A batch item's slack is for pauses; a connection it waits for like a hang (``hang_slack``).
        connect_slack = self.slack if self.hang_slack is None else self.hang_slack
        conn, self.warm = await self._pool.acquire(
            region.id, timeout_s=region.connect_deadline_s(connect_slack)
        )
        if stages is not None:
            stages.labels("connect").observe(loop.time() - acquiring)
        events = conn.events()
        in_io = True
        try:
            deadline = AttemptDeadline(
                region, started=loop.time(), slack=self.slack, hang_slack=self.hang_slack, learn=self.learn
            )
            await conn.start(self.start, self.audio)
            sent = loop.time()
            while True:
                in_io = True
                ev = await self._next(events, deadline)
                in_io = False
                now = loop.time()
                if stages is not None and isinstance(ev, TurnAdmitted):
                    stages.labels("admission").observe(now - sent)
                deadline.heard(ev, now)
                progress = self._fold(ev)
                if self.done is not None:
                    return
                if progress is None:
                    continue
                deadline.rearm(ev, now, self.progress.pending_chars)
                yield progress
        except (GeneratorExit, asyncio.CancelledError):
            # The caller closed the stream (barge-in) mid-turn: cancel the region's turn, then
            # drain to its turn.done; a read cut in half leaves the connection unknown: drop it.
            if self.disposition is Disposition.DISCARD:
                await conn.cancel(self.start.turn_id)
                if in_io:
                    self._cancelled["dropped"] += 1
                else:
                    self.disposition = Disposition.DRAIN
            raise
        finally:
            self._hand_back(conn, events)

    async def _next(self, events: AsyncIterator[RegionEvent], deadline: AttemptDeadline) -> RegionEvent:
        """The next event, or a ``FirstByteTimeout`` once ``deadline.due()`` passes. A failed probe
        of the region wakes the wait early, so the attempt re-reads its (now shorter) deadline."""
        loop = asyncio.get_running_loop()
        read = asyncio.ensure_future(anext(events))
        try:
            while not read.done():
                remaining = deadline.due() - loop.time()
                if remaining <= 0:
                    raise deadline.expired(loop.time())
                waiting: set[asyncio.Future[Any]] = {read}
                signal: asyncio.Task[bool] | None = None
                if self.region.probe_ok is not False:  # once it failed, due() already says so
                    signal = asyncio.create_task(self.region.hang_suspected.wait())
                    waiting.add(signal)
                try:
                    await asyncio.wait(waiting, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if signal is not None:
                        signal.cancel()
            try:
                return read.result()
            except StopAsyncIteration:
                raise RegionDisconnected(
                    f"region {self.region.id} ended the stream", region=self.region.id
                ) from None
        finally:
            if not read.done():
                read.cancel()
                await asyncio.wait([read])
                if not read.cancelled():
                    read.exception()  # retrieved: it lost the race, nobody reads it

    def _fold(self, ev: RegionEvent) -> RegionProgress | None:
        """Fold ``ev`` into the turn's progress and return it to pass on; ``None`` when there is
        nothing to pass on (``done`` is set when the region completed the turn). A refusal or a
        failure raises its typed error."""
        region = self.region
        if isinstance(ev, ClauseAudio):
            self.progress.voiced(ev.clause.text)
        elif isinstance(ev, TextDelta):
            self.progress.text(ev.delta)
            if not self.start.output_audio:
                _shown(self.progress, ev.delta)
        elif isinstance(ev, Transcript):
            self.progress.transcript = ev.text
        elif isinstance(ev, ToolCalls):
            self.called = True
        elif isinstance(ev, TurnRejected):
            self.disposition = Disposition.RELEASE
            raise RegionBusy(
                ev.message or f"region {region.id} is busy", region=region.id, retry_after_s=ev.retry_after_s
            )
        elif isinstance(ev, TurnDone):
            self.disposition = Disposition.RELEASE
            if ev.status == "failed":
                raise RegionError(
                    f"region {region.id} failed the turn: {ev.error}", region=region.id, code="turn_failed"
                )
            self.done = ev
            return None
        elif isinstance(ev, TurnError) and ev.turn_id:
            self.disposition = Disposition.RELEASE
            raise decode_error(ev.code, ev.message, region=region.id)
        elif not isinstance(ev, TurnQueued | TurnAdmitted):
            # An error about the connection rather than this turn, or a stray header: not the answer.
            log.warning("region %s sent %s outside the turn's answer", region.id, type(ev).__name__)
            return None
        return ev

    def _hand_back(self, conn: RegionConnection, events: AsyncIterator[RegionEvent]) -> None:
        if self.disposition is Disposition.DRAIN:
            drain = drain_turn(conn, events, self._pool, self._cancelled)
            self._pool.track(asyncio.create_task(drain, name=f"drain-{self.region.id}"))
        elif self.disposition is Disposition.RELEASE:
            self._pool.release(conn)
        else:
            self._pool.discard(conn)


def _shown(progress: TurnProgress, delta: str) -> None:
    """A text-only turn's ``delta`` (already in ``attempt_text``) reaches the client as it comes, with
    no audio to wait for: it is heard, and a failover continues after it. Appended as is (deltas may
    split words), not joined like clauses."""
    progress.heard_text += delta
    progress.attempt_voiced += delta


async def drain_turn(
    conn: RegionConnection,
    events: AsyncIterator[RegionEvent],
    pool: ConnectionPool,
    cancelled: dict[str, int],
) -> None:
    """Read a cancelled turn to its end so the connection can serve the next turn."""
    try:
        async with asyncio.timeout(DRAIN_TIMEOUT_S):
            async for ev in events:
                if isinstance(ev, TurnDone | TurnRejected) or (isinstance(ev, TurnError) and ev.turn_id):
                    cancelled["drained"] += 1
                    pool.release(conn)
                    return
    except (TimeoutError, RegionError):
        pass
    cancelled["dropped"] += 1
    pool.discard(conn)
