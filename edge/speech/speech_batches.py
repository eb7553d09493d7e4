"""Speech batches (``docs/speech.md``, "Batch synthesis"): what a job is made of, and how it looks.

A job is a list of ``POST /v1/audio/speech`` bodies (JSON ``{"items": [...]}``, or JSONL with one
body per line), each checked exactly as that endpoint checks it (an error names
``items[n].field``), an optional webhook (``{"url", "secret"}``; without a secret the edge makes one
and returns it once) and up to 16 metadata strings. Custom voices are resolved when the job is made
and kept with it. The job's residency is its key's (narrowed as for any request).

Its view (``GET /v1/speech/batches/{id}``, and the webhook's ``data``): status, counts, queue
position while items wait, and each item's status, regions, size and download URL.
"""

from __future__ import annotations

import binascii
import time
from typing import Any
from urllib.parse import urlsplit

import msgspec

from edge.shared.egress import ALLOW_ENV, EgressPolicy
from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.json_body import typed_body
from edge.speech.speech_deps import SpeechDeps
from edge.speech.speech_request import SpeechParams, check_speech
from edge.speech.webhooks import SECRET_PREFIX, new_secret, signing_key
from edge.stores.redis.batches import FINAL, BatchStore, ItemSpec, JobRecord
from edge.tenancy.auth import Principal
from edge.tenancy.session_tenancy import narrow
from wire.errors import ProtocolError

MAX_METADATA = 16
JSONL_TYPES = ("application/jsonl", "application/x-ndjson", "application/x-jsonlines")


class WebhookParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: str
    secret: str = ""


class BatchParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    items: list[SpeechParams]
    webhook: WebhookParams | None = None
    metadata: dict[str, str] = msgspec.field(default_factory=dict)


def parse_body(raw: bytes, content_type: str, query: dict[str, str]) -> BatchParams:
    """JSON ``{"items", "webhook", "metadata"}``, or JSONL items (then ``?webhook_url=`` and
    ``?webhook_secret=`` carry the webhook)."""
    if content_type.split(";")[0].strip().lower() not in JSONL_TYPES:
        return typed_body(raw, BatchParams)
    items = []
    for n, line in enumerate(raw.decode("utf-8", errors="replace").splitlines()):
        if line.strip():
            try:
                items.append(typed_body(line.encode(), SpeechParams))
            except InvalidParam as exc:
                raise InvalidParam(f"line {n + 1}: {exc.message}", param=f"items[{len(items)}]") from exc
    url = query.get("webhook_url", "")
    webhook = WebhookParams(url=url, secret=query.get("webhook_secret", "")) if url else None
    return BatchParams(items=items, webhook=webhook)


def _check_webhook(webhook: WebhookParams, egress: EgressPolicy) -> WebhookParams:
    parts = urlsplit(webhook.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidParam("webhook.url must be an http(s) URL", param="webhook.url")
    if len(webhook.url) > 2048:
        raise InvalidParam("webhook.url is over 2048 characters", param="webhook.url")
    if refused := egress.check_url(webhook.url):
        raise InvalidParam(
            f"webhook.url: {refused}; webhooks go to public addresses only "
            f"(an operator allows a local receiver with {ALLOW_ENV})",
            param="webhook.url",
        )
    secret = webhook.secret or new_secret()
    if len(secret) < 24 or len(secret) > 256:
        raise InvalidParam(f"webhook.secret must be 24 to 256 characters (e.g. {SECRET_PREFIX}...)",
                           param="webhook.secret")  # fmt: skip
    try:
        signing_key(secret)  # else no delivery could be signed: retried, failing, until the job expires
    except binascii.Error as exc:
        raise InvalidParam(f"webhook.secret: what follows {SECRET_PREFIX} must be base64 ({exc})",
                           param="webhook.secret") from exc  # fmt: skip
    return WebhookParams(url=webhook.url, secret=secret)


async def make_job(
    params: BatchParams, deps: SpeechDeps, principal: Principal
) -> tuple[JobRecord, list[ItemSpec]]:
    """The job and its items, every field checked (``InvalidParam`` naming the one at fault)."""
    limit = deps.settings.batches.max_items
    if not params.items:
        raise InvalidParam("items is empty: nothing to say", param="items")
    if len(params.items) > limit:
        raise InvalidParam(f"{len(params.items)} items; a batch takes at most {limit}", param="items")
    if len(params.metadata) > MAX_METADATA or any(
        len(k) > 64 or len(v) > 512 for k, v in params.metadata.items()
    ):
        raise InvalidParam(f"metadata: at most {MAX_METADATA} keys of 64 and values of 512 characters",
                           param="metadata")  # fmt: skip
    specs = []
    for n, item in enumerate(params.items):
        try:
            req = check_speech(item, deps.settings, principal)
            custom = None
            if req.custom is not None:
                custom = await deps.voices.resolve(req.custom, principal, param="voice")
        except ProtocolError as exc:
            param = getattr(exc, "param", "")
            raise InvalidParam(f"items[{n}]: {exc.message}", param=f"items[{n}].{param}".rstrip("."),
                               code=exc.code) from exc  # fmt: skip
        label = item.voice if isinstance(item.voice, str) else str(item.voice.get("id", ""))
        specs.append(ItemSpec(
            input=item.input, voice=label, region_voice=req.region_voice, custom_voice=custom,
            response_format=item.response_format, speed=item.speed,
        ))  # fmt: skip
    egress = deps.settings.batches.egress
    webhook = _check_webhook(params.webhook, egress) if params.webhook is not None else None
    residency = narrow(principal.policy.residency, principal.residency)
    job = JobRecord(
        id=new_id("batch"), key_id=principal.key_id, created_at=int(time.time()), total=len(specs),
        residency=None if residency is None else sorted(residency),
        webhook_url=webhook.url if webhook else "", webhook_secret=webhook.secret if webhook else "",
        metadata=dict(params.metadata),
    )  # fmt: skip
    return job, specs


def _status(fields: dict[str, str], states: dict[int, str]) -> str:
    if "finished_at" in fields:
        counts = {s: int(fields.get(s, 0)) for s in FINAL}
        if counts["cancelled"]:
            return "cancelled"
        return "completed" if counts["completed"] else "failed"
    return "in_progress" if any(s != "queued" for s in states.values()) else "queued"


async def job_view(store: BatchStore, job_id: str) -> dict[str, Any] | None:
    """The job as ``GET /v1/speech/batches/{id}`` shows it; ``None`` when there is no such job."""
    found = await store.record(job_id)
    return None if found is None else await view_of(store, *found)


async def view_of(store: BatchStore, job: JobRecord, fields: dict[str, str]) -> dict[str, Any]:
    """``job_view`` of a job record already read (``BatchStore.record``)."""
    job_id = job.id
    states = await store.states(job_id)
    results = await store.results(job_id)
    items = []
    for n in range(job.total):
        state = states.get(n, "queued")
        item: dict[str, Any] = {"index": n, "status": state}
        if (result := results.get(n)) is not None:
            item.update(regions=result.regions, audio_bytes=result.audio_bytes, cache=result.cache or None,
                        attempts=result.attempts,
                        error=result.error)  # fmt: skip
            if state == "completed":
                item["url"] = f"/v1/speech/batches/{job_id}/items/{n}/content"
        items.append(item)
    running = sum(1 for s in states.values() if s == "running")
    view: dict[str, Any] = {
        "id": job.id, "object": "speech.batch", "status": _status(fields, states),
        "created_at": job.created_at,
        "started_at": int(fields["started_at"]) // 1000 if "started_at" in fields else None,
        "finished_at": int(fields["finished_at"]) // 1000 if "finished_at" in fields else None,
        "counts": {
            "total": job.total, "completed": int(fields.get("completed", 0)),
            "failed": int(fields.get("failed", 0)), "cancelled": int(fields.get("cancelled", 0)),
            "in_progress": running, "queued": sum(1 for s in states.values() if s == "queued"),
        },
        "queue_position": await store.queue_position(job_id, states),
        "residency": job.residency, "metadata": job.metadata, "items": items,
        "webhook": None if not job.webhook_url else {
            "url": job.webhook_url, "status": fields.get("webhook_status", ""),
            "attempts": int(fields.get("webhook_attempts", 0)),
            "last_error": fields.get("webhook_error") or None,
        },
    }  # fmt: skip
    return view


__all__ = ["BatchParams", "job_view", "make_job", "parse_body", "view_of"]
