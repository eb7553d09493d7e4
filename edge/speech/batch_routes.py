"""The speech batch API, on every edge (``docs/speech.md``, "Batch synthesis"):

* ``POST /v1/speech/batches``  make a job (JSON ``{"items", "webhook", "metadata"}`` or JSONL): 201
  with its view, and the webhook secret when the edge made it (shown this once)
* ``GET /v1/speech/batches``  the key's jobs, newest first
* ``GET /v1/speech/batches/{id}``  progress: status, counts, queue position, each item
* ``GET /v1/speech/batches/{id}/items/{n}/content``  a finished item's audio
* ``POST /v1/speech/batches/{id}/cancel``  items not yet read are cancelled (the webhook says so)

A job is its key's: another key gets a 404 (an admin key sees all). Without the shared store there
are no batches: 503 saying how to configure one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Request, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, SkipValidation
from litestar.response import Response

from edge.shared.errors import BatchNotFound, BatchStoreUnavailable
from edge.speech.audio_api import Authenticate
from edge.speech.audio_encoding import SPEECH_FORMATS
from edge.speech.speech_batches import job_view, make_job, parse_body, view_of
from edge.speech.speech_deps import SpeechDeps
from edge.stores.redis.batches import BatchStore
from edge.tenancy.auth import ADMIN, Principal
from wire.bounded_redis import FAILURES

MAX_BODY_BYTES = 8 * 2**20
LIST_LIMIT = 100


@asynccontextmanager
async def _store_calls() -> AsyncIterator[None]:
    try:
        yield
    except FAILURES as exc:
        raise BatchStoreUnavailable(
            f"the shared store did not answer ({type(exc).__name__}): retry shortly"
        ) from exc


def batch_route_handlers(authenticate: Authenticate) -> list[HTTPRouteHandler]:
    async def caller(request: Request[Any, Any, Any], deps: SpeechDeps) -> tuple[BatchStore, Principal]:
        principal = await authenticate(request, [])
        if deps.batches is None:
            raise BatchStoreUnavailable(
                "speech batches need the shared store: start the edge with --store-url redis://... "
                "(`voicemesh up` provisions one)"
            )
        return deps.batches, principal

    async def owned(store: BatchStore, principal: Principal, job_id: FromPath[str]) -> dict[str, Any]:
        found = await store.record(job_id)
        if found is None or (found[0].key_id != principal.key_id and ADMIN not in principal.scopes):
            raise BatchNotFound(f"no speech batch {job_id!r} for this key")
        return await view_of(store, *found)

    @post("/v1/speech/batches", status_code=201, request_max_body_size=MAX_BODY_BYTES)
    async def create_batch(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> dict[str, Any]:
        async with _store_calls():
            store, principal = await caller(request, speech_deps)
            await speech_deps.limits.check_rate(principal.key_id, principal.policy)
            params = parse_body(
                await request.body(), request.headers.get("content-type", ""), dict(request.query_params)
            )
            job, specs = await make_job(params, speech_deps, principal)
            await store.create(job, specs)
            view = await job_view(store, job.id)
            assert view is not None
            if view["webhook"] is not None and params.webhook is not None and not params.webhook.secret:
                view["webhook"]["secret"] = job.webhook_secret  # made here: shown this once
            return view

    @get("/v1/speech/batches")
    async def list_batches(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> dict[str, Any]:
        async with _store_calls():
            store, principal = await caller(request, speech_deps)
            views = [
                v
                for i in await store.jobs_of(principal.key_id, LIST_LIMIT)
                if (v := await job_view(store, i))
            ]
            for view in views:
                view.pop("items")
            return {"object": "list", "data": views}

    @get("/v1/speech/batches/{job_id:str}")
    async def get_batch(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps], job_id: FromPath[str]
    ) -> dict[str, Any]:
        async with _store_calls():
            store, principal = await caller(request, speech_deps)
            return await owned(store, principal, job_id)

    @get("/v1/speech/batches/{job_id:str}/items/{index:int}/content")
    async def item_content(
        request: Request[Any, Any, Any],
        speech_deps: SkipValidation[SpeechDeps],
        job_id: FromPath[str],
        index: FromPath[int],
    ) -> Response[bytes]:
        async with _store_calls():
            store, principal = await caller(request, speech_deps)
            await owned(store, principal, job_id)
            spec = await store.spec(job_id, index)
            audio = await store.audio(job_id, index) if spec is not None else None
            if spec is None or audio is None:
                raise BatchNotFound(f"item {index} of {job_id} has no audio (yet): see its status")
            return Response(audio, media_type=SPEECH_FORMATS[spec.response_format].media_type)

    @post("/v1/speech/batches/{job_id:str}/cancel", status_code=200)
    async def cancel_batch(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps], job_id: FromPath[str]
    ) -> dict[str, Any]:
        async with _store_calls():
            store, principal = await caller(request, speech_deps)
            await owned(store, principal, job_id)
            await store.cancel(job_id)
            return await owned(store, principal, job_id)

    return [create_batch, list_batches, get_batch, item_content, cancel_batch]


__all__ = ["batch_route_handlers"]
