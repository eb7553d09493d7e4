"""``POST /v1/twilio/voice``: a phone number's voice webhook. Answers TwiML that connects the call
to this edge's media stream (``<Connect><Stream>``), signed like every Twilio webhook.

The webhook URL's query may carry the call's ``voice``, ``instructions`` and ``residency``
(``/v1/twilio/voice?voice=bella``): Twilio signs the URL, so they become the stream's
``<Parameter>``s as they are. A credential never travels this way (``docs/phone.md``).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post
from litestar.params import SkipValidation
from twilio.twiml.voice_response import Connect, VoiceResponse

from edge.app.services import EdgeServices
from edge.app.twilio import signature
from edge.app.twilio.call_setup import SESSION_PARAMS
from edge.app.twilio.media_stream import PATH

FORWARDED = (*SESSION_PARAMS, "residency")


def twiml(stream_url: str, parameters: dict[str, str]) -> str:
    response = VoiceResponse()
    connect = Connect()
    stream = connect.stream(url=stream_url)
    for name, value in parameters.items():
        stream.parameter(name=name, value=value)
    response.append(connect)
    return str(response)


@post("/v1/twilio/voice", status_code=200)
async def voice(request: Request[Any, Any, Any], services: SkipValidation[EdgeServices]) -> Response[str]:
    form = await request.form()
    fields = {key: str(value) for key, value in form.items()}
    url = signature.check(request, services.settings.twilio, "https", fields)
    # The stream where Twilio found this webhook: the same host (and proxy prefix), over wss.
    base = url.split("://", 1)[1].split("?", 1)[0].removesuffix(request.url.path)
    parameters = {k: v for k in FORWARDED if (v := request.query_params.get(k))}
    return Response(twiml(f"wss://{base}{PATH}", parameters), media_type="application/xml")


__all__ = ["twiml", "voice"]
