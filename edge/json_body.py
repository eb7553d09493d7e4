"""The JSON object body of an edge's REST request, or the endpoint's own 400."""

from __future__ import annotations

import json
from typing import Any

from wire.errors import ProtocolError


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
