"""What the fuzzer holds a server to, one exception class per way it can fail.

* ``OracleFailure`` - a server answered a bad input wrongly (its ``case`` is what was sent)
  * ``Hang`` - no answer within the case's timeout
  * ``ServerFault`` - an HTTP 5xx, a Realtime ``server_error``, a region ``internal_error``, close 1011
  * ``Unclear`` - an error without a client error type, or without a message saying what was wrong
  * ``AuthBypass`` - a region accepted a connection whose token it should have refused
  * ``Unhealthy`` - after the cases, a well-formed request is no longer served

Hypothesis tells bugs apart by exception class (and the line raising it), so each class here is
shrunk and reported on its own.
"""

from __future__ import annotations

from typing import Any

from wire.errors import ERRORS_BY_CODE, ProtocolError


class OracleFailure(AssertionError):
    """A bad input the server did not answer with a clear client error."""

    kind = "failure"

    def __init__(self, detail: str, case: Any = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.case = case


class Hang(OracleFailure):
    kind = "hang"


class ServerFault(OracleFailure):
    kind = "server error"


class Unclear(OracleFailure):
    kind = "unclear error"


class AuthBypass(OracleFailure):
    kind = "bad token accepted"


class Unhealthy(OracleFailure):
    kind = "unhealthy afterwards"


REALTIME_CLIENT_ERROR_TYPES = frozenset({"invalid_request_error"})
"""The Realtime ``error.type`` a bad client event gets (OpenAI's; ``server_error`` is the server's)."""

CLIENT_CLOSE_CODES = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009})
"""WebSocket close codes that blame the client (or end normally); 1011 is the server's fault, and
4000-4999 are the application's own (a region's 4401: unauthorized)."""


def check_realtime_event(event: Any) -> None:
    """A Realtime server event in answer to fuzz: an ``error`` must be the client's, and say why."""
    if not isinstance(event, dict) or event.get("type") != "error":
        return
    error = event.get("error")
    if not isinstance(error, dict):
        raise Unclear(f"an error event without an error object: {str(event)[:300]}")
    if error.get("code") == "server_error" or error.get("type") == "server_error":
        raise ServerFault(f"server_error: {str(error)[:300]}")
    if error.get("type") not in REALTIME_CLIENT_ERROR_TYPES or not error.get("message"):
        raise Unclear(f"an error that is not a clear client error: {str(error)[:300]}")


def check_http_status(status: int, what: str, body: str = "") -> None:
    """Any status under 500: a bad request is the client's to fix."""
    if status >= 500:
        raise ServerFault(f"HTTP {status} for {what}")


def check_close_code(code: int | None, what: str) -> None:
    """A connection the server closed: for a reason the client can act on, not an internal error."""
    if code is None:
        raise ServerFault(f"the server dropped the connection without a close frame ({what})")
    if code in CLIENT_CLOSE_CODES or 4000 <= code <= 4999:
        return
    raise ServerFault(f"the server closed the connection with code {code} ({what})")


def check_turn_message(message: Any) -> None:
    """A region's JSON frame in answer to fuzz: an ``error`` with a client error code and a message;
    no ``turn.done`` failed on the region's side (``internal_error``)."""
    if not isinstance(message, dict):
        raise Unclear(f"a region frame that is not a JSON object: {str(message)[:300]}")
    kind = message.get("type")
    if kind == "error":
        cls = ERRORS_BY_CODE.get(str(message.get("code")))
        if cls is None or not issubclass(cls, ProtocolError):
            raise ServerFault(f"a region error that is not the client's: {str(message)[:300]}")
        if not message.get("message"):
            raise Unclear(f"a region error that says nothing: {str(message)[:300]}")
    elif kind == "turn.done" and str(message.get("error") or "").startswith("internal_error"):
        raise ServerFault(f"a turn failed inside the region: {str(message)[:300]}")
