"""``POST /v1/realtime/calls`` and ``POST /v1/realtime/calls/{call_id}/hangup``: the Realtime API
over WebRTC, as OpenAI serves it.

The offer is the body (``Content-Type: application/sdp``) or OpenAI's multipart form (``sdp``, and
``session``: the session config as JSON); the answer is ``201`` with ``application/sdp`` and the
call's URL in ``Location`` (``/v1/realtime/calls/rtc_...``). Admission is the WebSocket's: the same
credentials (API keys, ``ek_`` client secrets), the key's connect rate and session cap, draining,
``?model=`` and ``?residency=``.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from litestar import Request, post
from litestar.connection import ASGIConnection
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, SkipValidation
from litestar.response import Response

from edge.app.calls import Calls
from edge.app.handshake import admit, claim, refused
from edge.app.realtime_serve import session_state
from edge.app.services import EdgeServices
from edge.app.webrtc.call import Call
from edge.shared.errors import BadCallRequest, Draining
from edge.tenancy.auth import Principal
from wire.errors import VoicemeshError

Authenticate = Callable[[ASGIConnection[Any, Any, Any, Any], list[str]], Awaitable[Principal]]
MAX_SDP_BYTES = 64 * 1024


async def read_offer(request: Request[Any, Any, Any]) -> tuple[str, dict[str, Any] | None]:
    """``(sdp, session config)`` of the request, or ``BadCallRequest`` saying what to send."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        form = await request.form()
        sdp, session = await _field(form.get("sdp")), await _field(form.get("session"))
    elif content_type in ("application/sdp", "text/plain", ""):
        sdp, session = (await request.body()).decode("utf-8", "replace"), None
    else:
        raise BadCallRequest(
            f"Content-Type {content_type!r}: send the SDP offer as application/sdp, or as "
            "multipart/form-data with the fields sdp and session"
        )
    if not isinstance(sdp, str) or not sdp.strip().startswith("v=0"):
        raise BadCallRequest("no SDP offer: the body (or the form's sdp field) must be an SDP offer (v=0...)")
    if len(sdp) > MAX_SDP_BYTES:
        raise BadCallRequest(f"the SDP offer is over {MAX_SDP_BYTES} bytes")
    if session is None or session == "":
        return sdp, None
    try:
        config = json.loads(session) if isinstance(session, str) else None
    except json.JSONDecodeError as exc:
        raise BadCallRequest(f"the session field is not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise BadCallRequest("the session field must be a JSON object (a session config)")
    return sdp, {"type": "realtime", **config}


async def _field(value: Any) -> Any:
    """A form field's text, whether it came as a value or as a file part (``-F sdp=@offer.sdp``)."""
    if value is not None and hasattr(value, "read"):
        return (await value.read()).decode("utf-8", "replace")
    return value


def webrtc_route_handlers(authenticate: Authenticate, calls: Calls) -> list[HTTPRouteHandler]:
    @post("/v1/realtime/calls", status_code=201)
    async def create_call(
        request: Request[Any, Any, Any], services: SkipValidation[EdgeServices]
    ) -> Response[str]:
        try:
            if services.draining:
                raise Draining("this edge is shutting down: call again")
            principal = await authenticate(request, [])
            sdp, config = await read_offer(request)
            slot = await admit(services, principal)
        except VoicemeshError as exc:
            refused(exc)  # counted; answered by the app's handler, as any refusal
            raise
        call: Call | None = None
        try:
            lease, resumed = await claim(request, services, principal)  # ?session_id=: a resumed session
            state = session_state(request, services, principal, resumed)
            state.input_audio_format = state.output_audio_format = "audio/pcm"  # the tracks' format
            call = Call("rtc_" + secrets.token_hex(12), services, state, principal, lease)
            answer = await call.answer(sdp)
            await call.configure(config, resumed)
        except BaseException as exc:
            if isinstance(exc, VoicemeshError):
                refused(exc)
            await services.limits.release(slot)
            if call is not None:
                with contextlib.suppress(Exception):
                    await call.session.close()
                await call.pc.close()
            raise
        live = call.live

        async def ended() -> None:
            calls.remove(live)  # (its sidebands closed)
            await services.limits.release(slot)

        calls.add(live)
        calls.spawn(live, call.run(ended))
        headers = {"location": f"/v1/realtime/calls/{call.id}"}
        return Response(answer, status_code=201, media_type="application/sdp", headers=headers)

    @post("/v1/realtime/calls/{call_id:str}/hangup", status_code=200)
    async def hangup(request: Request[Any, Any, Any], call_id: FromPath[str]) -> dict[str, Any]:
        principal = await authenticate(request, [])
        await calls.find(call_id, principal.key_id).hang_up(1000, "hangup")
        return {}

    return [create_call, hangup]


__all__ = ["read_offer", "webrtc_route_handlers"]
