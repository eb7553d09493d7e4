"""Which session a phone call gets: the voicemesh credential it runs under, and its voice,
instructions and residency, from the stream's ``<Parameter>``s (``customParameters``) and the
edge's settings (``docs/phone.md``).

* ``voicemesh_key``: the credential (an API key, a stored key, a JWT or, best, a client secret the
  TwiML's server minted for this call); else ``VOICEMESH_TWILIO_API_KEY``. Its key decides the
  tenant, limits, residency, voices and priority, as for any Realtime client.
* ``voice``, ``instructions``: applied with a ``session.update``, so the key's rights hold exactly
  as for a client (a voice the key may not use is refused, and so is the call).
* ``residency``: narrows the key's (``eu,de``); outside it the call is refused.

Every other parameter is the TwiML author's own and is ignored. The session itself is a telephony
one: G.711 mu-law in and out (the stream's own format, no conversion), server VAD with answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from edge.app.twilio.messages import MULAW, RATE, Start
from edge.shared.errors import BadRequest, NotAuthenticated

KEY_PARAM = "voicemesh_key"
SETUP_EVENT_ID = "twilio_setup"
"""The ``event_id`` of the set-up ``session.update``: an ``error`` naming it refuses the call."""
SESSION_PARAMS = ("voice", "instructions")
FORMAT = "audio/pcmu"
"""The session's input and output format: G.711 mu-law at 8 kHz, what Twilio streams."""


@dataclass(frozen=True, slots=True)
class CallSetup:
    token: str
    residency: str | None
    update: dict[str, Any]
    """The ``session.update`` event that makes the session a phone call's."""

    @classmethod
    def of(cls, start: Start, default_key: str | None) -> CallSetup:
        if (start.encoding, start.sample_rate, start.channels) != (MULAW, RATE, 1):
            raise BadRequest(
                f"the stream is {start.encoding} {start.sample_rate} Hz x{start.channels}: only Twilio's "
                f"{MULAW} {RATE} Hz mono is spoken", code="twilio_media_format",
            )  # fmt: skip
        params = start.custom_parameters
        token = params.get(KEY_PARAM) or default_key
        if not token:
            raise NotAuthenticated(
                "no voicemesh credential for this call: set VOICEMESH_TWILIO_API_KEY or pass "
                f'<Parameter name="{KEY_PARAM}">'
            )
        audio_format = {"format": {"type": FORMAT}}
        session: dict[str, Any] = {
            "type": "realtime",
            "audio": {
                "input": {**audio_format, "turn_detection": {"type": "server_vad", "create_response": True,
                                                             "interrupt_response": True}},
                "output": audio_format,
            },
        }  # fmt: skip
        if voice := params.get("voice"):
            session["audio"]["output"]["voice"] = voice
        if instructions := params.get("instructions"):
            session["instructions"] = instructions
        update = {"type": "session.update", "event_id": SETUP_EVENT_ID, "session": session}
        return cls(token=token, residency=params.get("residency") or None, update=update)

    def update_json(self) -> str:
        return json.dumps(self.update)


__all__ = ["FORMAT", "KEY_PARAM", "SETUP_EVENT_ID", "CallSetup"]
