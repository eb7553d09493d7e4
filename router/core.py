"""The router: picks a region for every turn and carries the turn over when that region fails.

A turn fails over on a connect failure, a missed deadline (first byte, first audio, or a stall
mid-answer; each derived from the region's own latency), a ``busy`` answer, a region-side turn
error, or the connection dropping mid-answer. The next region gets the transcript (no second STT)
and the text the user already heard, and continues after it. Failovers are bounded per turn and
across turns (a ``TokenBucket``). With no allowed region left the turn ends in ``Degraded``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import msgspec

from router import metrics
from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting
from router.breaker_storage import BreakerStorage, storage_from_url
from router.breakers import BreakerBoard
from router.choice import rank, residency_allows
from router.continuation import TurnProgress
from router.health import HealthProber, RegionHealth, Score
from router.pool import ConnectionPool
from router.registry import Registry, RegistryWatcher, load_registry
from router.settings import RouterSettings
from wire.client import ClauseAudio, RegionConnection, RegionEvent
from wire.errors import (
    BadAudio,
    BadEvent,
    BreakerOpen,
    FirstByteTimeout,
    HistoryTooLong,
    NoRegionAvailable,
    ProtocolError,
    RegionBusy,
    RegionDisconnected,
    RegionError,
    ResidencyRefused,
    UnknownVoice,
)
from wire.rates import TokenBucket
from wire.turn import (
    TextDelta,
    Transcript,
    TurnDone,
    TurnError,
    TurnQueued,
    TurnRejected,
    TurnStart,
)

log = logging.getLogger(__name__)

# Turn errors that another region would answer the same way: pass them on, do not fail over.
_CLIENT_ERROR_CODES = frozenset(
    cls.code for cls in (ProtocolError, BadEvent, BadAudio, UnknownVoice, HistoryTooLong)
) | {
    "invalid_request_error",
    "invalid_event",
    "invalid_audio",
    "unknown_voice",
    "history_too_long",
}


@dataclass
class _Outcome:
    done: TurnDone | None = None
    """Set when the region finished the turn (the caller yields it after the bookkeeping)."""
    client_error: TurnError | None = None
    warm: bool | None = None
    """Whether the attempt ran on a pooled connection (no handshake on the turn's path)."""


class Router:
    """``TurnRouter`` over real regions (``async with Router(settings) as r:``)."""

    def __init__(
        self,
        settings: RouterSettings,
        *,
        registry: Registry | None = None,
        storage: BreakerStorage | None = None,
    ) -> None:
        self.settings = settings
        self._regions: dict[str, RegionHealth] = {}
        self.breakers = BreakerBoard(
            storage or storage_from_url(settings.redis_url, namespace=settings.redis_namespace),
            fail_max=settings.breaker_fail_max,
            reset_timeout_s=settings.breaker_reset_s,
        )
        self.pool = ConnectionPool(
            connect_timeout_s=settings.connect_timeout_s,
            url_of=lambda r: self._regions[r].record.url if r in self._regions else None,
            warm_hold_s=settings.warm_hold_s,
        )
        self.prober = HealthProber(settings, lambda: list(self._regions.values()))
        self.prober.on_probed = lambda: self.pool.rewarm(
            lambda r: r in self._regions and self._regions[r].reachable and self.breakers.may_admit(r)
        )
        self.budget = TokenBucket(rate_per_s=settings.retry_budget_per_s, burst=settings.retry_budget_burst)
        self._sticky: OrderedDict[str, str] = OrderedDict()
        self.failovers: deque[dict[str, object]] = deque(maxlen=settings.failover_log_size)
        self.degraded_count = 0
        self.cancelled = {"drained": 0, "dropped": 0}
        """Cancelled turns whose connection was drained back to the pool, or closed."""
        self._watcher: RegistryWatcher | None = None
        if registry is not None:
            self.apply_registry(registry)
        elif settings.registry_path:
            self._watcher = RegistryWatcher(
                settings.registry_path, self.apply_registry, poll_s=settings.registry_poll_s
            )
            self.apply_registry(load_registry(settings.registry_path))
            self._watcher.check()  # remember the file's stamp: no reload of what was just read

    # Lifecycle.
    async def start(self) -> None:
        if self.settings.probe_interval_s > 0:
            await self.prober.probe_all()
        await self.breakers.refresh(list(self._regions))
        self.prober.start()
        if self._watcher is not None:
            self._watcher.start()
        ranked = self.rank(SessionRouting(session_id=""))
        self.pool.keep_warm([r.id for r, _ in ranked[: self.settings.warm_regions]])

    async def __aenter__(self) -> Router:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._watcher is not None:
            await self._watcher.aclose()
        await self.prober.aclose()
        await self.pool.aclose()
        await asyncio.to_thread(self.breakers.close)

    # Registry.
    def apply_registry(self, registry: Registry) -> None:
        new: dict[str, RegionHealth] = {}
        for record in registry.regions:
            old = self._regions.get(record.id)
            if old is not None and old.record == record:
                new[record.id] = old
            else:
                new[record.id] = RegionHealth(record, self.settings)
                if old is not None:
                    self.pool.forget(record.id)  # its URL changed: old connections go elsewhere
        for gone in set(self._regions) - set(new):
            self.pool.forget(gone)
        self._regions = new
        log.info("router: registry has %d regions: %s", len(new), ", ".join(new) or "-")

    @property
    def regions(self) -> dict[str, RegionHealth]:
        return self._regions

    # Choice.
    def rank(
        self, session: SessionRouting, exclude: frozenset[str] | set[str] = frozenset()
    ) -> list[tuple[RegionHealth, Score]]:
        return rank(
            self._regions.values(),
            residency=session.residency,
            may_admit=self.breakers.may_admit,
            exclude=exclude,
            sticky=self._sticky.get(session.session_id),
            stickiness_s=self.settings.stickiness_s,
        )

    def _stick(self, session_id: str, region: str) -> None:
        self._sticky[session_id] = region
        self._sticky.move_to_end(session_id)
        while len(self._sticky) > self.settings.sticky_sessions_max:
            self._sticky.popitem(last=False)

    def _nothing_left_reason(self, session: SessionRouting) -> str:
        if session.residency is not None and not any(
            residency_allows(r.record, session.residency) for r in self._regions.values()
        ):
            return ResidencyRefused.code
        return NoRegionAvailable.code

    # The turn.
    async def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncGenerator[RoutedEvent, None]:
        progress = TurnProgress(heard_text=start.heard_text, transcript=start.transcript)
        tried: list[str] = []
        failed: RegionError | None = None
        failed_at = 0.0
        attempt = 0
        if self.breakers.storage.blocking:
            await self.breakers.refresh(list(self._regions))  # see other replicas' verdicts
        while True:
            ranked = self.rank(session, exclude=set(tried))
            reason = ""
            if not ranked:
                reason = failed.code if isinstance(failed, RegionBusy) else self._nothing_left_reason(session)
            elif attempt >= self.settings.max_attempts:
                reason = "retry_limit"
            elif attempt and not self.budget.take():
                reason = "retry_budget_exhausted"
            if reason:
                yield self._degrade(session, start, progress, tried, reason, failed)
                return
            region = ranked[0][0]
            self.pool.keep_warm([r.id for r, _ in ranked[: self.settings.warm_regions]])
            try:
                await self.breakers.admit(region.id)
            except BreakerOpen:
                tried.append(region.id)  # another turn holds its half-open trial: next one
                continue
            attempt += 1
            tried.append(region.id)
            if failed is not None:
                yield self._failed_over(session, start, failed, region.id, progress)
            yield Routed(region=region.id, attempt=attempt)
            metrics.TURNS.labels(region.id).inc()
            outcome = _Outcome()
            t0 = time.perf_counter()
            try:
                slack = self.settings.last_resort_slack if len(ranked) == 1 else 1.0
                async with contextlib.aclosing(
                    self._attempt(region, start, audio, progress, outcome, slack)
                ) as events:
                    async for ev in events:
                        if failed is not None and isinstance(ev, ClauseAudio):
                            self._note_gap(failed_at, outcome.warm)
                            failed = None
                        yield ev
            except RegionError as exc:
                await self.breakers.record(region.id, exc)
                if not isinstance(exc, RegionBusy):
                    region.observe_failure()
                log.warning("turn %s: region %s failed (%s): %s", start.turn_id, region.id, exc.code, exc)
                failed, failed_at = exc, time.perf_counter()
                continue
            except BaseException:
                self.breakers.release(region.id)  # cancelled by the caller: no verdict on the region
                raise
            if outcome.client_error is not None:
                self.breakers.release(region.id)
                yield outcome.client_error
                return
            await self.breakers.record(region.id, None)
            region.observe_success(time.perf_counter() - t0)
            self._stick(session.session_id, region.id)
            if outcome.done is not None:
                yield outcome.done
            return

    async def _attempt(
        self,
        region: RegionHealth,
        start: TurnStart,
        audio: bytes | None,
        progress: TurnProgress,
        outcome: _Outcome,
        slack: float = 1.0,
    ) -> AsyncGenerator[RegionEvent, None]:
        """One region's try at the turn, its deadlines stretched by ``slack``. Raises a
        ``RegionError`` to fail over."""
        if progress.transcript is not None:
            # Failing over (or the edge already knows the words): skip STT, continue after what
            # the user heard.
            start = msgspec.structs.replace(
                start, transcript=progress.transcript, heard_text=progress.heard_text
            )
            audio = None
        elif progress.heard_text != start.heard_text:
            start = msgspec.structs.replace(start, heard_text=progress.heard_text)
        progress.new_attempt()
        conn, outcome.warm = await self.pool.acquire(region.id, timeout_s=region.connect_deadline_s())
        events = conn.events()
        # What happens to the connection afterwards: only a turn that ended (or was drained to
        # its end) leaves it clean enough to reuse.
        disposition = "discard"
        in_io = True
        try:
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await conn.start(start, audio)
            deadline = t0 + slack * region.first_byte_deadline_s()
            stage = "first byte"
            last_audio = last_event = t0
            while True:
                in_io = True
                try:
                    async with asyncio.timeout_at(deadline) as timeout:
                        region.watch(timeout, last_event)
                        try:
                            ev = await anext(events)
                        finally:
                            region.unwatch(timeout)
                except TimeoutError:
                    why = " after a failed health probe" if region.probe_ok is False else ""
                    raise FirstByteTimeout(
                        f"region {region.id}: silent for {loop.time() - last_event:.2f}s{why}"
                        f" (waiting for {stage})",
                        region=region.id,
                    ) from None
                except StopAsyncIteration:
                    raise RegionDisconnected(
                        f"region {region.id} ended the stream", region=region.id
                    ) from None
                in_io = False
                now = last_event = loop.time()
                if stage == "first byte":
                    region.observe_first_byte(now - t0)
                    stage = "transcript"
                if isinstance(ev, ClauseAudio):
                    if stage != "progress after audio":
                        stage = "progress after audio"
                        region.observe_ttfa(now - t0)
                        metrics.TTFA.labels(region.id).observe(now - t0)
                    else:
                        region.observe_clause_gap(now - last_audio, len(ev.clause.text))
                    last_audio = now
                    progress.voiced(ev.clause.text)
                elif isinstance(ev, TextDelta):
                    progress.text(ev.delta)
                elif isinstance(ev, Transcript):
                    progress.transcript = ev.text
                    stage = "audio"
                elif isinstance(ev, TurnRejected):
                    disposition = "release"
                    raise RegionBusy(
                        ev.message or f"region {region.id} is busy",
                        region=region.id,
                        retry_after_s=ev.retry_after_s,
                    )
                elif isinstance(ev, TurnDone):
                    disposition = "release"
                    if ev.status == "failed":
                        raise RegionError(
                            f"region {region.id} failed the turn: {ev.error}",
                            region=region.id,
                            code="turn_failed",
                        )
                    outcome.done = ev
                    return
                elif isinstance(ev, TurnError) and ev.turn_id:
                    disposition = "release"
                    if ev.code in _CLIENT_ERROR_CODES:
                        outcome.client_error = ev
                        return
                    raise RegionError(
                        f"region {region.id}: {ev.code}: {ev.message}", region=region.id, code=ev.code
                    )
                # Every sign of life moves the deadline: while it transcribes, by the region's
                # time to first audio; once it speaks, by how long it takes to voice what is left.
                if isinstance(ev, TurnQueued):
                    deadline = now + ev.estimated_wait_s + slack * region.first_audio_deadline_s()
                elif stage == "transcript":
                    deadline = now + slack * region.first_audio_deadline_s()
                else:
                    deadline = now + slack * region.stall_deadline_s(progress.pending_chars)
                yield ev
        except (GeneratorExit, asyncio.CancelledError):
            # The caller closed the stream (barge-in) mid-turn: cancel the region's turn, then
            # drain to its turn.done in the background; a read cut in half leaves the connection
            # in an unknown state, so that one is dropped.
            if disposition == "discard":
                await conn.cancel(start.turn_id)
                if in_io:
                    self.cancelled["dropped"] += 1
                else:
                    disposition = "drain"
            raise
        finally:
            if disposition == "drain":
                self.pool.track(asyncio.create_task(self._drain(conn, events), name=f"drain-{region.id}"))
            elif disposition == "release":
                self.pool.release(conn)
            else:
                self.pool.discard(conn)

    async def _drain(self, conn: RegionConnection, events: AsyncIterator[RegionEvent]) -> None:
        """Read a cancelled turn to its end so the connection can serve the next turn."""
        try:
            async with asyncio.timeout(2.0):
                async for ev in events:
                    if isinstance(ev, TurnDone | TurnRejected) or (isinstance(ev, TurnError) and ev.turn_id):
                        self.cancelled["drained"] += 1
                        self.pool.release(conn)
                        return
        except (TimeoutError, RegionError):
            pass
        self.cancelled["dropped"] += 1
        self.pool.discard(conn)

    # Notes.
    def _failed_over(
        self, session: SessionRouting, start: TurnStart, exc: RegionError, to: str, progress: TurnProgress
    ) -> FailedOver:
        metrics.FAILOVERS.labels(exc.region, exc.code).inc()
        self.failovers.append(
            {
                "at": datetime.now(UTC).isoformat(),
                "session": session.session_id,
                "turn_id": start.turn_id,
                "from": exc.region,
                "to": to,
                "reason": exc.code,
                "detail": exc.message,
                "heard_chars": len(progress.heard_text),
                "gap_s": None,
                "warm_connection": None,
            }
        )
        return FailedOver(
            from_region=exc.region, to_region=to, reason=exc.code, heard_text=progress.heard_text
        )

    def _note_gap(self, failed_at: float, warm: bool | None) -> None:
        if self.failovers:
            self.failovers[-1]["gap_s"] = round(time.perf_counter() - failed_at, 4)
            self.failovers[-1]["warm_connection"] = warm

    def _degrade(
        self,
        session: SessionRouting,
        start: TurnStart,
        progress: TurnProgress,
        tried: list[str],
        reason: str,
        failed: RegionError | None,
    ) -> Degraded:
        self.degraded_count += 1
        metrics.DEGRADED.labels(reason).inc()
        log.warning(
            "turn %s (session %s) degraded: %s%s",
            start.turn_id,
            session.session_id,
            reason,
            f" (last failure: {failed.code})" if failed is not None else "",
        )
        self.failovers.append(
            {
                "at": datetime.now(UTC).isoformat(),
                "session": session.session_id,
                "turn_id": start.turn_id,
                "from": failed.region if failed is not None else None,
                "to": None,
                "reason": reason,
                "detail": failed.message if failed is not None else "",
                "heard_chars": len(progress.heard_text),
                "gap_s": None,
            }
        )
        return Degraded(
            reason=reason,
            unvoiced_text=progress.unvoiced_text,
            transcript=progress.transcript or "",
            tried=tuple(tried),
        )

    def status(self) -> dict[str, object]:
        ranked = {r.id: i for i, (r, _) in enumerate(self.rank(SessionRouting(session_id="")))}
        regions = []
        for r in self._regions.values():
            entry = r.status()
            entry["breaker"] = self.breakers.status(r.id)
            entry["rank"] = ranked.get(r.id)
            entry["idle_connections"] = self.pool.idle_count(r.id)
            regions.append(entry)
        return {
            "regions": regions,
            "recent_failovers": list(self.failovers),
            "degraded_turns": self.degraded_count,
            "cancelled_turns": dict(self.cancelled),
            "breaker_storage": self.breakers.storage.describe(),
            "retry_budget": {
                "available": round(self.budget.available(), 2),
                "burst": self.budget.burst,
                "refill_per_s": self.budget.rate_per_s,
                "refused": self.budget.refused,
            },
            "registry": {
                "path": self.settings.registry_path,
                "reloads": self._watcher.reloads if self._watcher else 0,
                "error": self._watcher.last_error if self._watcher else "",
            },
            "location": {"lat": self.settings.location.lat, "lon": self.settings.location.lon},
            "handshakes": dict(self.pool.handshakes),
        }
