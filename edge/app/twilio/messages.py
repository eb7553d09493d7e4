"""Twilio Media Streams' WebSocket messages (``twilio.com/docs/voice/media-streams/websocket-messages``):
read what Twilio sends (``connected``, ``start``, ``media``, ``mark``, ``dtmf``, ``stop``) and write
what a bidirectional stream (``<Connect><Stream>``) may send back (``media``, ``mark``, ``clear``).

The messages Twilio sends are written here too, for the client that plays Twilio in tests and
benchmarks (``voicemesh/twilio_client.py``): one definition of the shapes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MULAW = "audio/x-mulaw"
RATE = 8000
FRAME_BYTES = 160
"""20 ms of 8 kHz mu-law: what Twilio sends per ``media`` message, and what the edge sends back."""
SILENCE = b"\xff"
"""mu-law zero, to fill the last frame of an answer."""


class BadMessage(ValueError):
    """A message Twilio would never send: not JSON, no ``event``, or a field missing."""


@dataclass(frozen=True, slots=True)
class Start:
    stream_sid: str
    call_sid: str
    account_sid: str
    custom_parameters: dict[str, str] = field(default_factory=dict)
    encoding: str = MULAW
    sample_rate: int = RATE
    channels: int = 1


@dataclass(frozen=True, slots=True)
class Media:
    payload: str
    """Base64 mu-law, as Twilio sent it (the session's ``audio/pcmu`` takes it as is)."""


@dataclass(frozen=True, slots=True)
class Mark:
    name: str
    """A mark the edge sent, echoed once the audio before it was played (or cleared)."""


@dataclass(frozen=True, slots=True)
class Dtmf:
    digit: str


@dataclass(frozen=True, slots=True)
class Stop:
    pass


@dataclass(frozen=True, slots=True)
class Connected:
    pass


Message = Start | Media | Mark | Dtmf | Stop | Connected


def _field(obj: dict[str, Any], key: str, kind: type) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind):
        raise BadMessage(f"`{key}` missing or not a {kind.__name__}")
    return value


def parse(raw: str | bytes) -> Message | None:
    """One message from Twilio; ``None`` for an event this edge does not use (Twilio adds some)."""
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadMessage(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadMessage("not a JSON object")
    event = _field(data, "event", str)
    if event == "media":
        return Media(_field(_field(data, "media", dict), "payload", str))
    if event == "mark":
        return Mark(_field(_field(data, "mark", dict), "name", str))
    if event == "start":
        start = _field(data, "start", dict)
        fmt = start.get("mediaFormat") if isinstance(start.get("mediaFormat"), dict) else {}
        params = start.get("customParameters") or {}
        if not isinstance(params, dict):
            raise BadMessage("`customParameters` is not an object")
        try:
            return Start(
                stream_sid=_field(start, "streamSid", str), call_sid=str(start.get("callSid", "")),
                account_sid=str(start.get("accountSid", "")),
                custom_parameters={str(k): str(v) for k, v in params.items()},
                encoding=str(fmt.get("encoding", MULAW)), sample_rate=int(fmt.get("sampleRate", RATE)),
                channels=int(fmt.get("channels", 1)),
            )  # fmt: skip
        except (TypeError, ValueError) as exc:
            raise BadMessage(f"`mediaFormat` is not Twilio's: {exc}") from None
    if event == "dtmf":
        return Dtmf(str(_field(data, "dtmf", dict).get("digit", "")))
    if event == "stop":
        return Stop()
    if event == "connected":
        return Connected()
    return None


# -- what the edge sends Twilio ------------------------------------------------------------------------


def media(stream_sid: str, payload: str) -> str:
    return json.dumps({"event": "media", "streamSid": stream_sid, "media": {"payload": payload}})


def mark(stream_sid: str, name: str) -> str:
    return json.dumps({"event": "mark", "streamSid": stream_sid, "mark": {"name": name}})


def clear(stream_sid: str) -> str:
    return json.dumps({"event": "clear", "streamSid": stream_sid})


# -- what Twilio sends (for the client that plays Twilio) ---------------------------------------------


def connected() -> str:
    return json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"})


def start(stream_sid: str, call_sid: str, account_sid: str, parameters: dict[str, str], seq: int) -> str:
    body = {
        "accountSid": account_sid, "streamSid": stream_sid, "callSid": call_sid, "tracks": ["inbound"],
        "mediaFormat": {"encoding": MULAW, "sampleRate": RATE, "channels": 1}, "customParameters": parameters,
    }  # fmt: skip
    return json.dumps({"event": "start", "sequenceNumber": str(seq), "start": body, "streamSid": stream_sid})


def inbound_media(stream_sid: str, payload: str, *, seq: int, chunk: int, timestamp_ms: int) -> str:
    body = {"track": "inbound", "chunk": str(chunk), "timestamp": str(timestamp_ms), "payload": payload}
    return json.dumps({"event": "media", "sequenceNumber": str(seq), "media": body, "streamSid": stream_sid})


def played_mark(stream_sid: str, name: str, seq: int) -> str:
    return json.dumps(
        {"event": "mark", "sequenceNumber": str(seq), "streamSid": stream_sid, "mark": {"name": name}}
    )


def stop(stream_sid: str, call_sid: str, account_sid: str, seq: int) -> str:
    body = {"accountSid": account_sid, "callSid": call_sid}
    return json.dumps({"event": "stop", "sequenceNumber": str(seq), "streamSid": stream_sid, "stop": body})


__all__ = [
    "FRAME_BYTES", "MULAW", "RATE", "SILENCE", "BadMessage", "Connected", "Dtmf", "Mark", "Media",
    "Message", "Start", "Stop", "clear", "connected", "inbound_media", "mark", "media", "parse",
    "played_mark", "start", "stop",
]  # fmt: skip
