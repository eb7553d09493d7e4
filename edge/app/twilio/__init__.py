"""Phone calls through Twilio Media Streams (``docs/phone.md``): one module per job.

``messages`` (Twilio's WebSocket messages), ``signature`` (``X-Twilio-Signature``), ``call_setup``
(which key, voice and instructions a call gets), ``bridge`` (the session's events to Twilio's
``media``/``mark``/``clear``), ``media_stream`` (the WebSocket endpoint), ``voice_webhook`` (TwiML).
"""

from litestar.handlers import BaseRouteHandler

from edge.app.twilio.media_stream import media_stream
from edge.app.twilio.voice_webhook import voice


def twilio_route_handlers() -> list[BaseRouteHandler]:
    return [media_stream, voice]


__all__ = ["twilio_route_handlers"]
