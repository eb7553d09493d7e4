"""One turn's way through the regions: try the best, fail over on a failure, degrade when out of options.

A turn fails over on a connect failure, a missed deadline (first byte, first audio, or a stall
mid-answer; each derived from the region's own latency), a ``busy`` answer, a region-side turn
error, or the connection dropping mid-answer. The next region gets the transcript (no second STT)
and the text the user already heard, and continues after it. Failovers are bounded per turn
(``max_attempts``) and across turns (the router's ``TokenBucket``). With no allowed region left the
turn ends in ``Degraded``. Each region's try is a ``RegionAttempt`` (``router.attempt``).

A request the region refused as the client's fault (a ``ProtocolError``: text too long, unknown
voice, a prompt the LLM refused) ends the turn in ``ClientRefused``: another region would refuse it
too, so it is neither retried nor counted against the region's breaker.

Function calls (``tool_calls``) come from a region whole, once; an answer ends with them. A region
that fails before sending them has sent nothing of them: the next region writes them again. One
that fails after they were passed on still counts against its breaker, but the turn does not move:
the edge has the calls and the answer is over, so the turn completes with them (no second call).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass

from router import metrics, tracing
from router.api import ClientRefused, Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from router.attempt import RegionAttempt
from router.continuation import TurnProgress
from router.failover_log import FailoverLog, FailoverRecord
from router.health import RegionHealth, Score
from router.health_board import HealthBoard
from router.pool import ConnectionPool
from router.settings import RouterSettings
from router.sticky import StickySessions
from wire.client import ClauseAudio
from wire.errors import BreakerOpen, ProtocolError, RegionBusy, RegionError
from wire.rates import TokenBucket
from wire.turn import TextDelta, ToolCalls, TurnDone, TurnStart

BATCH_SLACK = 1000.0
"""How much longer a batch item's deadlines are (see ``TurnFailover.run``)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TurnDeps:
    """What a turn uses of what the router's turns share (built once by ``Router``)."""

    settings: RouterSettings
    health: HealthBoard
    """Ranks the regions, admits through their breakers, and hears how each try ended."""
    pool: ConnectionPool
    budget: TokenBucket
    """Failovers across turns (``retry_budget_per_s``)."""
    sticky: StickySessions
    failovers: FailoverLog
    cancelled: dict[str, int]
    """Cancelled turns whose connection was drained back to the pool, or closed."""


class TurnFailover:
    """One per turn: the regions tried, the last failure, the attempts spent; ``run()`` serves it."""

    def __init__(
        self, deps: TurnDeps, session: SessionRouting, start: TurnStart, audio: bytes | None
    ) -> None:
        self.deps = deps
        self.session = session
        self.start = start
        self.audio = audio
        self.progress = TurnProgress(heard_text=start.heard_text, transcript=start.transcript)
        self.tried: list[str] = []
        self.failed: RegionError | None = None
        self.failed_at = 0.0
        """When ``failed`` happened (perf_counter): the gap to the next region's audio starts here."""
        self.attempts = 0

    def give_up_reason(self, ranked: list[tuple[RegionHealth, Score]]) -> str:
        """Why the turn must degrade now, or ``""`` to try ``ranked[0]``. Spends a retry token."""
        r = self.deps
        if not ranked:
            return (
                self.failed.code
                if isinstance(self.failed, RegionBusy)
                else r.health.nothing_left_reason(self.session.residency)
            )
        if self.attempts >= r.settings.max_attempts:
            return "retry_limit"
        # The retry budget is the live turns': a batch item's retries are bounded by max_attempts
        # here and by the edge's batch worker backing off.
        if self.attempts and not self.start.is_batch and not r.budget.take():
            return "retry_budget_exhausted"
        return ""

    async def run(self) -> AsyncGenerator[RoutedEvent, None]:
        r = self.deps
        choosing = time.perf_counter()  # the router's ``choose`` stage (router/metrics.py)
        if r.health.breakers.storage.blocking:
            await r.health.refresh()  # see other replicas' verdicts
        while True:
            ranked = r.health.rank(
                self.session.residency, exclude=set(self.tried), sticky=r.sticky.get(self.session.session_id)
            )
            reason = self.give_up_reason(ranked)
            if reason:
                yield self._degrade(reason)
                return
            region = ranked[0][0]
            r.pool.keep_warm([h.id for h, _ in ranked[: r.settings.warm_regions]])
            try:
                await r.health.admit(region)
            except BreakerOpen:
                self.tried.append(region.id)  # another turn holds its half-open trial: next one
                continue
            self.attempts += 1
            self.tried.append(region.id)
            if self.failed is not None:
                yield self._failed_over(self.failed, region.id)
            if not self.start.is_batch:
                metrics.STAGE_SECONDS.labels("choose").observe(time.perf_counter() - choosing)
            yield Routed(region=region.id, attempt=self.attempts)
            metrics.TURNS.labels(region.id).inc()
            slack = r.settings.last_resort_slack if len(ranked) == 1 else 1.0
            hang_slack = None
            if self.start.is_batch:
                # A batch item pauses for every live turn on its region (region.live_first): a
                # silence never moves it; a lost connection or failed probes do.
                slack, hang_slack = BATCH_SLACK, r.settings.last_resort_slack
            span, start = tracing.attempt_span(region.id, self.attempts, self.start)
            attempt = RegionAttempt(
                region, start, self.audio, self.progress, pool=r.pool, cancelled=r.cancelled,
                slack=slack, hang_slack=hang_slack,
                learn=None if self.start.is_batch else functools.partial(r.health.measured, region),
            )  # fmt: skip
            t0 = time.perf_counter()
            refused: ProtocolError | None = None
            try:
                async with contextlib.aclosing(attempt.events()) as events:
                    async for ev in events:
                        if self.failed is not None and self._reaches_user(ev):
                            self._note_gap(attempt.warm)
                        yield ev
            except ProtocolError as exc:
                refused = exc
                tracing.left(span, "client_refused")
            except RegionError as exc:
                tracing.left(span, exc.code, exc)
                await r.health.turn_ended(region, exc)
                log.warning(
                    "turn %s: region %s failed (%s): %s", self.start.turn_id, region.id, exc.code, exc
                )
                if attempt.called:  # the edge has this answer's calls: it is over, not to be redone
                    yield self._called_done(region.id)
                    return
                self.failed, self.failed_at = exc, time.perf_counter()
                choosing = self.failed_at
                continue
            except BaseException:
                tracing.left(span, "abandoned")
                r.health.abandoned(region)  # cancelled by the caller: no verdict on the region
                raise
            if refused is not None:
                r.health.abandoned(region)  # the request's fault: no verdict on the region
                log.info(
                    "turn %s: refused as a client error (%s): %s", self.start.turn_id, refused.code, refused
                )
                yield ClientRefused.of(refused)
                return
            tracing.left(span, "completed")
            # A batch item's length says nothing of the region's speed.
            duration = None if self.start.is_batch else time.perf_counter() - t0
            await r.health.turn_ended(region, None, duration_s=duration)
            r.sticky.stick(self.session.session_id, region.id)
            if attempt.done is not None:
                yield attempt.done
            return

    def _reaches_user(self, ev: RoutedEvent) -> bool:
        """The answer itself: a clause's audio, a function call, or for a text-only turn its text."""
        if isinstance(ev, ClauseAudio | ToolCalls):
            return True
        return not self.start.output_audio and isinstance(ev, TextDelta)

    def _called_done(self, region: str) -> TurnDone:
        """The ending of a turn whose region failed after its function calls were passed on."""
        return TurnDone(
            turn_id=self.start.turn_id,
            region=region,
            status="completed",
            transcript=self.progress.transcript or "",
            text=self.progress.heard_text,
        )

    def _note_gap(self, warm: bool | None) -> None:
        """The next region's first audio (text, for a text-only turn): the failover is over. Noted on
        this turn's own record."""
        gap = time.perf_counter() - self.failed_at
        metrics.FAILOVER_GAP.observe(gap)
        self.deps.failovers.note_gap(self.session.session_id, self.start.turn_id, gap, warm)
        self.failed = None

    def _record(
        self, from_region: str | None, to_region: str | None, reason: str, detail: str
    ) -> FailoverRecord:
        return FailoverRecord(
            at=FailoverRecord.now(),
            session=self.session.session_id,
            turn_id=self.start.turn_id,
            from_region=from_region,
            to_region=to_region,
            reason=reason,
            detail=detail,
            heard_chars=len(self.progress.heard_text),
        )

    def _failed_over(self, exc: RegionError, to: str) -> FailedOver:
        metrics.FAILOVERS.labels(exc.region, exc.code).inc()
        tracing.failover(exc, to, self.progress.heard_text, self.failed_at)
        self.deps.failovers.failed_over(self._record(exc.region, to, exc.code, exc.message))
        return FailedOver(
            from_region=exc.region, to_region=to, reason=exc.code, heard_text=self.progress.heard_text
        )

    def _degrade(self, reason: str) -> Degraded:
        failed = self.failed
        metrics.DEGRADED.labels(reason).inc()
        log.warning(
            "turn %s (session %s) degraded: %s%s",
            self.start.turn_id,
            self.session.session_id,
            reason,
            f" (last failure: {failed.code})" if failed is not None else "",
        )
        record = self._record(
            failed.region if failed is not None else None,
            None,
            reason,
            failed.message if failed is not None else "",
        )
        self.deps.failovers.degraded_turn(record)
        return Degraded(
            reason=reason,
            unvoiced_text=self.progress.unvoiced_text,
            transcript=self.progress.transcript or "",
            tried=tuple(self.tried),
            failed_region=failed.region if failed is not None else "",
            failure=failed.code if failed is not None else "",
        )
