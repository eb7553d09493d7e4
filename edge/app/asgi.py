"""The edge's HTTP and WebSocket surface (Litestar).

* ``GET /v1/realtime``  WebSocket, OpenAI Realtime protocol (auth at the handshake)
* ``POST /v1/realtime/calls``  the same over WebRTC: SDP offer in, answer out (``edge/app/webrtc/``)
* ``POST /v1/realtime/client_secrets``  mint a short-lived ``ek_`` secret from an API key
* ``GET /status``  the router's view of the regions plus the edge's own counters (admin scope)
* ``GET /health``  liveness, unauthenticated
* ``/v1/keys``  stored API keys: create, list, rotate, revoke (admin scope; ``edge/tenancy/key_routes.py``)
* ``GET /v1/keys/{key_id}/audit``, ``/usage``  a key's audit trail and usage (admin scope;
  ``edge/tenancy/tenant_admin.py``)
* ``POST /v1/audio/speech``, ``POST /v1/audio/transcriptions``, ``GET /v1/models``  the OpenAI audio
  API (``edge/speech/audio_api.py``, ``docs/speech.md``)
* ``GET /metrics``  Prometheus metrics of the edge and its router: the scraper's metrics credential (as a
  region's) or an admin key (``edge/app/metrics_access.py``)
* ``GET /v1/twilio/media-stream``, ``POST /v1/twilio/voice``  phone calls through Twilio, signed by
  Twilio (``edge/app/twilio/``, ``docs/phone.md``)

Refusals are real HTTP responses with a JSON body saying why (``{"error": {"code", "message"}}``):
400 bad request, 401 bad credentials, 403 missing scope, 408 handshake too slow, 429 limits, 431
oversized credential, 404 unknown ``session_id`` (resume), 503 draining (with ``Retry-After``).
At the handshake they go through the ASGI WebSocket denial-response extension. The handshake is
bounded in time, and so is a session: ``max_session_s`` in all, and ``idle_timeout_s`` without a
client event (an ``error`` event says which, then the socket closes).

``/v1/realtime?call_id=ID`` is a live call's sideband (``edge/app/sideband.py``, ``docs/webrtc.md``).
``/v1/realtime?session_id=ID`` resumes a session (``docs/resume.md``): the same key's session, from
its snapshot in the shared store, on whichever edge the client reaches. ``?residency=eu,de``
narrows the key's residency for the session (403 outside it: ``edge/tenancy/session_tenancy.py``,
``docs/tenants.md``).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from litestar import Litestar, Request, get, post, websocket
from litestar.connection import WebSocket
from litestar.datastructures import State
from litestar.params import SkipValidation
from litestar.response import Response as HttpResponse

from edge.app.calls import Calls
from edge.app.dependencies import route_dependencies
from edge.app.handshake import admit, authenticate, claim, deny
from edge.app.metrics_access import MetricsAccess
from edge.app.realtime_serve import serve, session_state
from edge.app.services import EdgeServices
from edge.app.sideband import serve_sideband
from edge.app.twilio import twilio_route_handlers  # issue 32: phone calls (docs/phone.md)
from edge.app.web import web_route_handlers  # issue 7: talk page `/`, ops page `/ops` (edge/app/web.py)
from edge.app.webrtc.routes import webrtc_route_handlers
from edge.shared.errors import Draining, Forbidden, edge_error
from edge.shared.metrics import CONTENT_TYPE, render
from edge.speech.audio_api import audio_route_handlers  # issue 16a: /v1/audio/*, /v1/models
from edge.speech.batch_routes import batch_route_handlers  # issue 16c
from edge.speech.batch_worker import BatchWorker
from edge.speech.voice_routes import voice_route_handlers  # issue 16b: /v1/voices
from edge.tenancy.auth import (
    ADMIN,
    KEY_SUBPROTOCOL,
)
from edge.tenancy.client_secrets import MintRequest
from edge.tenancy.key_routes import key_route_handlers  # issue 17: /v1/keys (edge/tenancy/key_routes.py)
from edge.tenancy.session_tenancy import narrow
from edge.tenancy.tenant_admin import tenant_route_handlers
from wire.errors import VoicemeshError

log = logging.getLogger("voicemesh.edge")


@websocket("/v1/realtime")
async def realtime(socket: WebSocket[Any, Any, Any], services: SkipValidation[EdgeServices]) -> None:
    retry_after_s = services.settings.resume.retry_after_s
    subprotocols: list[str] = list(socket.scope.get("subprotocols") or [])
    try:
        if services.draining:
            raise Draining("this edge is shutting down: connect again (resume with session_id)")
        principal = await authenticate(services, socket, subprotocols)
        if (call_id := socket.query_params.get("call_id")) is not None:  # a call's sideband
            await serve_sideband(socket, services, principal, call_id, _subprotocol(subprotocols))
            return
        slot = await admit(services, principal)
    except VoicemeshError as exc:  # the client's fault or the edge's: answered by its class
        await deny(socket, exc, retry_after_s)
        return
    try:
        lease, resumed = await claim(socket, services, principal)
        state = session_state(socket, services, principal, resumed)
    except VoicemeshError as exc:
        await services.limits.release(slot)
        await deny(socket, exc, retry_after_s)
        return
    try:
        await socket.accept(subprotocols=_subprotocol(subprotocols))
        await serve(socket, services, state, lease, resumed, principal)
    finally:
        await services.limits.release(slot)


def _subprotocol(offered: list[str]) -> str | None:
    """Browsers offer ("realtime", "openai-insecure-api-key.KEY"): the first one that is not the key,
    as OpenAI answers."""
    return next((p for p in offered if not p.startswith(KEY_SUBPROTOCOL)), None)


@post("/v1/realtime/client_secrets", status_code=200)
async def client_secrets(
    request: Request[Any, Any, Any], services: SkipValidation[EdgeServices]
) -> dict[str, Any]:
    """OpenAI's body (``expires_after``, ``session``) plus ``voicemesh.single_use`` (a secret good
    for one handshake). Minting has its own rate bucket per key, apart from connects."""
    principal = await authenticate(services, request, [])
    if principal.via == "client_secret":
        raise Forbidden("client secrets cannot mint client secrets: use an API key")
    services.mint_limits.check_rate(principal.key_id)
    mint = MintRequest.parse(await request.body())
    narrow(principal.policy.residency, mint.residency)  # 403 outside the key's residency
    value, expires_at = await services.auth.secrets.mint(
        principal.key_id, mint, policy=services.auth.mint_claims(principal), stored_key=principal.stored_key
    )
    return {
        "value": value,
        "expires_at": expires_at,
        "session": mint.session or {"type": "realtime", "object": "realtime.session"},
    }


@get("/status")
async def status(request: Request[Any, Any, Any], services: SkipValidation[EdgeServices]) -> dict[str, Any]:
    """Operations data: admin scope only (a browser's client secret never has it)."""
    (await authenticate(services, request, [])).require(ADMIN)
    return {
        "edge": {
            "open_sessions": services.open_sessions,
            "sessions": sorted(services.sessions.live),  # which edge serves a session (edge drills)
            "draining": services.draining,
            "vad": services.vad.status(),
            "store": services.store.status(),
            "limits": services.limits.status(),  # per-key limits shared across edges, or not
            "keys": services.auth.keys.store.status(),
            "turns": services.recent_turns.list(),  # the ops page's waterfall
        },
        "router": services.router.status(),
    }


@get("/health")
async def health(services: SkipValidation[EdgeServices]) -> HttpResponse[dict[str, str]]:
    """``draining`` (503) once SIGTERM arrived: load balancers stop sending new clients here."""
    if services.draining:
        headers = {"retry-after": str(services.settings.resume.retry_after_s)}
        return HttpResponse({"status": "draining"}, status_code=503, headers=headers)
    return HttpResponse({"status": "ok"})


@get("/metrics")
async def metrics(
    request: Request[Any, Any, Any], services: SkipValidation[EdgeServices]
) -> HttpResponse[bytes]:
    """The metrics credential (as a region's ``/metrics``) or an admin key: ``edge/app/metrics_access.py``."""
    access = request.app.state.metrics_access
    await access.check(request.headers.get("authorization"), lambda: authenticate(services, request, []))
    return HttpResponse(render(), media_type=CONTENT_TYPE)


def _error_response(_: Request[Any, Any, Any], exc: VoicemeshError) -> HttpResponse[dict[str, Any]]:
    """Every refusal of every route: the status, type and code its class carries."""
    error = edge_error(exc)
    return HttpResponse(error.http_body(), status_code=error.status)


def create_app(services: EdgeServices) -> Litestar:
    worker = None
    if services.batches is not None:
        worker = BatchWorker(services.speech_deps(), services.batches, draining=lambda: services.draining)
    authenticated = functools.partial(authenticate, services)
    calls = Calls()

    async def startup(_: Litestar) -> None:
        await services.start()
        if worker is not None:
            worker.start()

    async def shutdown(_: Litestar) -> None:
        if worker is not None:
            await worker.stop()  # its claims go back to the queue: another edge takes them on
        await calls.aclose()
        await services.aclose()

    return Litestar(
        route_handlers=[
            realtime,
            client_secrets,
            status,
            health,
            metrics,
            *web_route_handlers(),  # issue 7
            *webrtc_route_handlers(authenticated, calls),  # issue 32: /v1/realtime/calls (WebRTC)
            *key_route_handlers(),  # issue 17a: /v1/keys
            *tenant_route_handlers(authenticated),  # issue 17b: /v1/keys/{id}/audit and /usage
            *audio_route_handlers(authenticated),  # issue 16a: speech, transcriptions, models
            *voice_route_handlers(authenticated),  # issue 16b: custom voices
            *batch_route_handlers(authenticated),  # issue 16c: speech batches
            *twilio_route_handlers(),  # issue 32: /v1/twilio/media-stream, /v1/twilio/voice
        ],
        dependencies=route_dependencies(services),
        on_startup=[startup],
        on_shutdown=[shutdown],
        exception_handlers={VoicemeshError: _error_response},
        state=State({"metrics_access": MetricsAccess(), "calls": calls}),
        debug=False,
        logging_config=None,  # Litestar's default replaces the root handler: the process's format stays
    )


__all__ = ["create_app"]
