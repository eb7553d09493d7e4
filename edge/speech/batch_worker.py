"""An edge's share of the speech batch work: claim an item (or a finished job's webhook) from the
shared queue (``edge.stores.redis.batches.py``), do it, and say how it went.

An item is read aloud as a ``batch`` priority speak-only turn: the router sends it where the
job's residency allows, and the region runs it only while no live turn needs it
(``region/live_first.py``), so a batch never slows a live caller. A region dying mid-item hands the
next one the clauses already read (the router's failover, as for ``/v1/audio/speech``). When no
region can take it (all busy with live turns, or none left), the item goes back to the queue and
is tried again later, whole, with a growing wait, until ``item_deadline_s`` has passed. A hit in
the speech cache costs no synthesis; a complete result is cached for the next request.

A webhook is delivered signed (``edge/speech/webhooks.py``), retried with a doubling wait up to
``webhook_attempts``. Each claim is heartbeated; on a drain this edge hands its claims back at once,
and an edge killed mid-claim loses only the lease (``lease_s``): another edge then takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from edge.shared.events import new_id
from edge.shared.settings import BatchSettings
from edge.speech.audio_encoding import speech_encoder
from edge.speech.speech_batches import view_of
from edge.speech.speech_booking import book_cache_hit, speech_booking
from edge.speech.speech_deps import SpeechDeps
from edge.speech.speech_request import SpeechParams, speech_key
from edge.speech.webhooks import WebhookFailed, WebhookRefused, deliver
from edge.stores.redis.batches import BatchStore, Claim, ItemResult, ItemSpec, JobRecord
from edge.turns.speech_stream import SpeechStream
from router.api import SessionRouting
from wire.bounded_redis import FAILURES
from wire.errors import NoRegionAvailable, ProtocolError
from wire.turn import TurnStart

log = logging.getLogger(__name__)


@dataclass
class BatchWorker:
    deps: SpeechDeps
    store: BatchStore
    draining: Callable[[], bool]
    """The edge is shutting down (SIGTERM): claim no more."""
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _claims: set[Claim] = field(default_factory=set)
    _stopping: bool = False
    _http: httpx.AsyncClient | None = None

    @property
    def settings(self) -> BatchSettings:
        return self.deps.settings.batches

    def start(self) -> None:
        self._http = self.settings.egress.client(self.settings.webhook_timeout_s)
        self._tasks = [
            asyncio.create_task(self._loop(), name=f"batch-worker-{n}") for n in range(self.settings.workers)
        ]

    async def stop(self) -> None:
        """Stop working and hand every claim back to the queue at once (another edge goes on)."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for claim in list(self._claims):
            with contextlib.suppress(*FAILURES):
                await self.store.release(claim, 0.0)
        self._claims.clear()
        if self._http is not None:
            await self._http.aclose()

    async def _loop(self) -> None:
        failing = False
        while not self._stopping:
            if self.draining():  # claims no more: the edges that stay take the rest
                await asyncio.sleep(self.settings.poll_s)
                continue
            try:
                claim = await self.store.claim(self.settings.lease_s)
                failing = False
            except FAILURES as exc:
                if not failing:
                    log.warning("speech batches: the shared store is unreachable (%s); trying again", exc)
                failing = True
                await asyncio.sleep(self.settings.poll_s * 4)
                continue
            if claim is None:
                await asyncio.sleep(self.settings.poll_s)
                continue
            self._claims.add(claim)
            beat = asyncio.create_task(self._heartbeat(claim))
            try:
                if claim.kind == "hook":
                    await self._webhook(claim)
                else:
                    await self._item(claim)
                self._claims.discard(claim)
            except FAILURES as exc:
                log.warning(
                    "speech batches: %s lost to the shared store (%s); its lease will pass", claim.member, exc
                )
                self._claims.discard(claim)
            except Exception:  # a bug in one item must not stop the worker
                log.exception("speech batches: %s failed", claim.member)
                self._claims.discard(claim)
                with contextlib.suppress(*FAILURES):
                    await self.store.release(claim, self.settings.max_retry_s)
            finally:
                beat.cancel()

    async def _heartbeat(self, claim: Claim) -> None:
        every = self.settings.lease_s / 3
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(*FAILURES):
                await self.store.heartbeat(claim, self.settings.lease_s)

    def _backoff(self, tries: int) -> float:
        return float(min(self.settings.max_retry_s, self.settings.retry_s * 2 ** max(0, tries - 1)))

    async def _item(self, claim: Claim) -> None:
        found = await self.store.record(claim.job_id)
        spec = await self.store.spec(claim.job_id, claim.index)
        if found is None or spec is None:  # expired meanwhile
            await self.store.done_with(claim)
            return
        job, _ = found
        if not await self.store.start(claim):
            return  # cancelled meanwhile
        tries = await self.store.tried(claim)
        if time.time() > job.created_at + self.settings.item_deadline_s:
            await self._fail(claim, tries, "no_region_available",
                             "no region could read this item before its deadline")  # fmt: skip
            return
        try:
            result, audio = await self._render(job, spec, claim)
        except NoRegionAvailable as exc:
            wait = self._backoff(tries)
            log.info("speech batches: %s waits %.0f s (%s)", claim.member, wait, exc.message)
            await self.store.release(claim, wait)
            return
        except ProtocolError as exc:  # a region refused the request itself: no retry helps
            await self._fail(claim, tries, exc.code, exc.message)
            return
        result.attempts = tries
        if await self.store.finish(claim, result, audio) == -1:
            log.info("speech batches: %s was cancelled while it was read", claim.member)

    async def _fail(self, claim: Claim, tries: int, code: str, message: str) -> None:
        result = ItemResult(status="failed", error={"code": code, "message": message}, attempts=tries)
        await self.store.finish(claim, result)

    async def _render(self, job: JobRecord, spec: ItemSpec, claim: Claim) -> tuple[ItemResult, bytes]:
        deps = self.deps
        residency = None if job.residency is None else frozenset(job.residency)
        turn_id = new_id("speech")
        routing = SessionRouting(session_id=f"{job.id}-{claim.index}", residency=residency)
        params = SpeechParams(model="batch", input=spec.input, voice=spec.voice,
                              response_format=spec.response_format, speed=spec.speed)  # fmt: skip
        key = speech_key(params, spec.region_voice, spec.custom_voice, routing)
        if (cached := await deps.cache.get(key)) is not None:
            # Booked too (every item is, ``docs/speech.md``), as a cache hit: the audio, no region.
            await book_cache_hit(deps.accounting, job.key_id, routing, turn_id, cached)
            result = ItemResult(
                status="completed", regions=cached.regions, audio_bytes=len(cached.audio), cache="hit"
            )
            return result, cached.audio
        start = TurnStart(
            turn_id=turn_id, speak_text=spec.input, voice=spec.region_voice, speed=spec.speed,
            priority="batch", custom_voice=spec.custom_voice,
        )  # fmt: skip
        stream = SpeechStream(deps.router, deps.fallback, routing, start,
                              speak_on_no_region=False, all_or_nothing=True)  # fmt: skip
        await stream.open()
        encoder = speech_encoder(spec.response_format)
        parts = [data async for piece in stream.pcm() if (data := encoder.encode(piece.pcm))]
        parts.append(encoder.finish())
        audio = b"".join(parts)
        out = stream.outcome
        if not out.complete and out.heard.unvoiced_rest(spec.input):
            # The turn ended (``TurnDone`` not completed) with text unsaid: kept, it would be a
            # cut result marked completed. Tried again whole, like an item no region could take.
            raise NoRegionAvailable("the region ended the item before its end")
        regions = list(dict.fromkeys(out.regions))
        if out.complete and regions:
            await deps.cache.put(key, audio, regions, pcm_bytes=out.audio_bytes)
        await speech_booking(deps.accounting, job.key_id, routing, turn_id)(stream.trail, "completed")
        return ItemResult(status="completed", regions=regions, audio_bytes=len(audio), cache="miss"), audio

    async def _webhook(self, claim: Claim) -> None:
        found = await self.store.record(claim.job_id)
        if found is None:  # expired meanwhile
            await self.store.done_with(claim)
            return
        job, _ = found
        view = await view_of(self.store, *found)
        event_id = f"evt_{claim.job_id.removeprefix('batch_')}"  # the same on every retry
        event = {
            "id": event_id, "object": "event", "type": f"speech.batch.{view['status']}",
            "created_at": int(time.time()), "data": view,
        }  # fmt: skip
        body = json.dumps(event).encode()
        assert self._http is not None
        try:
            await deliver(self._http, job.webhook_url, job.webhook_secret, event_id, body)
        except WebhookFailed as exc:
            attempts = await self.store.webhook_tried(claim.job_id, "pending", str(exc))
            if attempts >= self.settings.webhook_attempts or isinstance(exc, WebhookRefused):
                await self.store.webhook_tried(claim.job_id, "failed", str(exc), count=False)
                await self.store.done_with(claim)
                log.warning(
                    "speech batches: webhook of %s given up after %d attempts: %s",
                    claim.job_id,
                    attempts,
                    exc,
                )
                return
            await self.store.release(claim, self._backoff(attempts))
            return
        await self.store.webhook_tried(claim.job_id, "delivered")
        await self.store.done_with(claim)


__all__ = ["BatchWorker"]
