"""Realtime events in and out, checked against the installed ``openai`` package's own models.

Client events are validated with the SDK's ``RealtimeClientEvent`` union; server events are built
through the SDK's server event models, so what the edge sends is what a stock client parses.
Vendor additions stay inside what the SDK tolerates: ``response.metadata`` (a string map) and
``voicemesh.*`` event types (the client yields unknown types as-is).
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import msgspec
import pydantic
from openai.types.realtime import realtime_server_event as rse
from openai.types.realtime.realtime_client_event import RealtimeClientEvent

from edge.shared.errors import InvalidParam, edge_error
from wire.errors import BadEvent, VoicemeshError

Send = Callable[[str], Awaitable[None]]
"""Sends one server event (JSON text) to the session's client."""

VENDOR_QUEUED = "voicemesh.turn.queued"
"""Sent while a region queues the turn: ``position`` and ``estimated_wait_s``."""
VENDOR_ROUTED = "voicemesh.turn.routed"
"""Sent when a region takes the turn (again after a failover): ``region``, ``attempt``."""
VENDOR_FAILED_OVER = "voicemesh.turn.failed_over"
"""Sent when the turn leaves a failed region: ``from_region``, ``to_region``, ``reason``."""


def _by_type(union: Any) -> dict[str, type[pydantic.BaseModel]]:
    """The SDK's event unions (``Annotated[Union[...], ...]``) as ``{type literal: model}``."""
    models: tuple[type[pydantic.BaseModel], ...] = union.__origin__.__args__
    return {m.model_fields["type"].annotation.__args__[0]: m for m in models}  # type: ignore[union-attr]


_client_models = _by_type(RealtimeClientEvent)
SERVER_EVENT_MODELS = _by_type(rse.RealtimeServerEvent)
CLIENT_EVENT_TYPES = frozenset(_client_models)


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


MAX_JSON_INT = 2**53
"""Largest integer magnitude read from a client: what every JSON implementation holds exactly.
Bigger ones are refused at parsing, so none reaches msgpack (2**64), numpy or C (2**63)."""


def _no_constant(name: str) -> None:
    raise BadEvent(f"{name} is not JSON", code="invalid_json")


def _check_values(value: Any, path: str = "") -> None:
    """Refuse, naming the field, what JSON can say but the edge cannot hold: integers past
    ``MAX_JSON_INT``, non-finite floats (``1e999``), and lone surrogates (``"\\ud800"``: no
    character, and UTF-8, in every event the edge sends back and on the region's wire, cannot carry
    one)."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidParam(f"{path or 'a key'}: a lone surrogate is not text", param=path) from exc
    elif isinstance(value, bool):
        pass
    elif isinstance(value, int):
        if abs(value) > MAX_JSON_INT:
            raise InvalidParam(f"{path}: integer out of range (|n| <= 2**53)", param=path)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidParam(f"{path}: number out of range", param=path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_values(key, path)
            _check_values(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_values(item, f"{path}.{i}")


def read_client_frame(raw: str | bytes) -> dict[str, Any]:
    """A client frame as a JSON object; raises ``BadEvent`` (code ``invalid_json``) otherwise."""
    try:
        data = json.loads(raw, parse_constant=_no_constant)  # (Python reads NaN/Infinity by default)
    except (ValueError, RecursionError) as exc:
        raise BadEvent(f"event is not valid JSON: {exc}", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise BadEvent("event must be a JSON object", code="invalid_json")
    return data


MAX_EVENT_ID_CHARS = 512

APPEND = "input_audio_buffer.append"
_APPEND_BYTES = APPEND.encode()


class _Append(msgspec.Struct, forbid_unknown_fields=True):
    """A plain ``input_audio_buffer.append``: msgspec checks the JSON, the type and the base64 in C."""

    type: Literal["input_audio_buffer.append"]
    audio: bytes
    event_id: str | None = None


_read_append = msgspec.json.Decoder(_Append).decode


def read_append(raw: str | bytes) -> tuple[bytes, str | None] | None:
    """``(audio, event_id)`` of a well-formed ``input_audio_buffer.append``, else ``None``.

    The fast path for the frame a streaming client sends 25 times a second: no dict, no SDK model,
    no Python base64. It only ever says yes to frames the full path (``read_client_frame``,
    ``validate_client_event``, strict base64) accepts with the same result; anything else (an
    unknown field, padding msgspec refuses, a non-ASCII ``event_id``, bad input of any kind)
    returns ``None``, and the full path answers it exactly as before, errors included."""
    if (APPEND not in raw) if isinstance(raw, str) else (_APPEND_BYTES not in raw):  # no decode tried
        return None
    try:
        event = _read_append(raw)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    event_id = event.event_id
    if event_id is not None and (len(event_id) > MAX_EVENT_ID_CHARS or not event_id.isascii()):
        return None
    return event.audio, event_id


def client_event_id(data: dict[str, Any]) -> str | None:
    """The frame's ``event_id``, to echo in an ``error``: read before the event is checked, so even a
    refused event's error names it; ``None`` when it could not be echoed safely (not a string, too
    long, not encodable)."""
    value = data.get("event_id")
    if not isinstance(value, str) or len(value) > MAX_EVENT_ID_CHARS:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return None
    return value


def _param(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the API names the field: without the model and validator names
    pydantic puts in it for unions (``session.RealtimeSessionCreateRequest.audio...``)."""
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))


def validate_client_event(data: dict[str, Any]) -> tuple[RealtimeClientEvent, str]:
    """``(event, type)`` from a frame read by ``read_client_frame``; raises ``BadEvent`` (with a
    specific code, and the param where one is at fault) on bad input."""
    _check_values(data)
    type_ = data.get("type")
    if not isinstance(type_, str) or not type_:
        raise BadEvent("event has no `type`", code="missing_type")
    if type_ not in CLIENT_EVENT_TYPES:
        raise BadEvent(f"unknown event type {type_!r}", code="unknown_event")
    try:
        event: RealtimeClientEvent = _client_models[type_].model_validate(data)  # type: ignore[assignment]
        return event, type_
    except pydantic.ValidationError as exc:
        errors = exc.errors()
        # A union (``turn_detection``: server_vad | semantic_vad) reports its other members' ``type``
        # first: the error of the member the client named says what to fix.
        first = next(
            (e for e in errors if not (e["type"] == "literal_error" and e["loc"][-1] == "type")), errors[0]
        )
        where = _param(first["loc"])
        raise InvalidParam(f"invalid {type_}: {where}: {first['msg']}", param=where) from exc


def server_event(type_: str, **fields: Any) -> str:
    """One server event as JSON, validated by the SDK's model for ``type_``."""
    body = {"type": type_, "event_id": new_id("event"), **fields}
    model = SERVER_EVENT_MODELS.get(type_)
    if model is None:  # vendor events: the stock client yields them untouched
        return json.dumps(body)
    return model.model_validate(body).model_dump_json(exclude_unset=True)


def error_event(
    exc: VoicemeshError,
    *,
    event_id: str | None = None,
    param: str | None = None,
    error_type: str | None = None,
) -> str:
    """The ``error`` event telling the client of ``exc``: the ``type``, ``code`` and ``param`` its
    class carries (``edge.shared.errors.edge_error``). ``param`` and ``error_type``, when given, are a
    router refusal's own (``router.api.ClientRefused``, which arrives as a bare wire error)."""
    error = edge_error(exc).payload()
    if param is not None:
        error["param"] = param
    if error_type is not None:
        error["type"] = error_type
    return server_event("error", error={**error, "event_id": event_id})
