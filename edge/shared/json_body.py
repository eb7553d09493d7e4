"""The JSON object body of an edge's REST request, or the endpoint's own 400."""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

import msgspec

from edge.shared.errors import InvalidParam
from wire.errors import ProtocolError

T = TypeVar("T")


def json_object(raw: bytes, error: type[ProtocolError]) -> dict[str, Any]:
    """``raw`` as a JSON object (``{}`` when empty); anything else raises ``error`` with the reason."""
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: deeply nested input
        raise error(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise error("body must be a JSON object")
    return body


def typed_body(raw: bytes, kind: type[T]) -> T:
    """``raw`` decoded as ``kind`` (a ``msgspec.Struct``); ``InvalidParam`` naming the field at
    fault (msgspec's ``$.field``, or an unknown field's name), else ``body``."""
    try:
        return msgspec.json.decode(raw, type=kind)
    except msgspec.ValidationError as exc:
        # An item of a list is named with its index and field (``items[2].voice``, as OpenAI names it).
        m = re.search(r"\$\.(\w+(?:\[\d+\](?:\.\w+)?)?)|unknown field `(\w+)`", str(exc))
        param = (m.group(1) or m.group(2)) if m else "body"
        raise InvalidParam(f"invalid request body: {exc}", param=param) from exc
    except msgspec.DecodeError as exc:
        raise InvalidParam(f"the body is not JSON: {exc}", param="body") from exc
