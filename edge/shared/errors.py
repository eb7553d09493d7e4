"""The edge's error hierarchy: every refusal the edge answers, with what the caller is told.

Each class carries its answer as class attributes: ``status`` (the HTTP status of a REST refusal
or a denied WebSocket handshake), ``error_type`` and ``code`` (the Realtime ``error`` event's, and
the HTTP body's ``{"error": {"type", "code", "message", "param"}}``). One exception handler
(``edge/app/asgi.py``) and one ``error`` event builder (``edge.shared.events.error_event``) read
them through ``edge_error``: there is no table from classes to statuses anywhere.

Whose fault it is follows from the branch: a ``ClientError`` is the caller's (4xx,
``invalid_request_error``; it is also a ``wire.errors.ProtocolError``, so every ``except
ProtocolError`` of the edge and router keeps treating it as the client's); a ``ServerError`` is the
edge's or a dependency's (5xx, ``server_error``; never a ``ProtocolError``: a Redis outage is not
the client's mistake, and a client retrying later is right to).

Errors of ``wire.errors`` (shared with the router and regions, which know nothing of HTTP) reach
the edge's boundary too: ``edge_error`` answers them by the fault the wire gives them, a
``ProtocolError`` as a ``ClientError`` (400), any other as a ``ServiceUnavailable`` (503: no region,
a region's failure), keeping their code and message.

* VoicemeshError (wire.errors)
  * EdgeError - an error the edge answers; ``status``, ``error_type``, ``code`` (and ``param``)
    * ClientError (also wire ProtocolError) - 4xx: the request is at fault; sending it again fails again
      * BadRequest - 400: the request is malformed or a value is out of range
        * InvalidParam (also wire BadEvent) - a field out of bounds; ``param`` names it
        * VoiceRefused (also wire UnknownVoice) - a voice no region speaks (``invalid_value``)
        * BadResidency (also wire BadEvent) - the residency asked for is not a list of tags
        * BadMintRequest - the body of ``POST /v1/realtime/client_secrets``
        * BadCallRequest - the body of ``POST /v1/realtime/calls`` (a WebRTC offer: ``edge/app/webrtc/``)
        * BadKeyRequest - a body of the keys API (``/v1/keys``)
        * BadAdminQuery - a query parameter or path part of ``/v1/keys/{id}/audit`` or ``/usage``
      * NotAuthenticated - 401: no credential, or an unknown, expired or malformed one
        * CredentialTooLarge - 431: a bearer token longer than any credential the edge issues
        * KeyRevoked - 401: the key was revoked (the ``error`` event that ends its open sessions)
      * Forbidden - 403: a valid credential without the scope the endpoint needs
        * ResidencyNotAllowed - a residency outside the key's
      * NotFound - 404: nothing this caller may see has that id
        * SessionNotFound - unknown, expired, or another key's session (``?session_id=``)
        * KeyNotFound - no stored key with this id
        * VoiceNotFound - no custom voice with this id that the caller may see
        * BatchNotFound - no such batch job for this key, or no audio for that item
      * RequestTimeout - 408: the client took too long
        * HandshakeTimeout - checking the credentials or loading the session took too long
        * SessionIdle - no client event within ``idle_timeout_s`` (then the socket closes)
        * SessionExpired - the session reached ``max_session_s`` (then the socket closes)
      * Conflict - 409: the request collides with another
        * SessionTakenOver - a resume elsewhere took this session (then the socket closes)
      * TooManyRequests - 429: over a limit of the key or of the edge
        * RateLimited - over the key's connect, mint or event rate
        * TooManySessions - the key's (or the edge's) sessions are all open
    * ServerError - 5xx: the edge or a dependency failed; the same request may succeed later
      * InternalError - 500: a bug, answered so that it costs one event, not the session
      * ServiceUnavailable - 503: something the edge depends on is not there now
        * Draining - this edge is shutting down (``Retry-After``: connect again, resume)
        * NoRegionInResidency - no region of the session's residency could serve the turn
        * StoreUnavailable - the shared store (Redis) did not answer, or there is none
          * KeyStoreUnavailable - stored keys cannot be checked or changed now
          * VoiceStoreUnavailable - custom voices cannot be read or changed now
          * BatchStoreUnavailable - no shared store for batches, or it did not answer

Not here, on purpose: ``InvalidPolicy`` (``edge/shared/key_policy.py``, a ``ValueError`` its callers
turn into the ``BadRequest`` of their endpoint) and ``WebhookFailed`` (``edge/speech/webhooks.py``,
a delivery outcome the batch worker retries), and ``BadMessage`` (``edge/app/twilio/messages.py``, a
message Twilio would never send: logged and ignored, or a ``BadRequest`` before the stream's
``start``): none is ever answered to a caller.
"""

from __future__ import annotations

from typing import Any

from wire.errors import BadEvent, ProtocolError, UnknownVoice, VoicemeshError


class EdgeError(VoicemeshError):
    """Base of every error the edge answers; not raised itself (``ClientError``, ``ServerError``)."""

    status = 500
    error_type = "server_error"
    code = "server_error"
    param: str | None = None
    """The client's field at fault (the Realtime ``error.param``, as OpenAI names it), if one is."""

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message, code=code)
        if param is not None:
            self.param = param

    def payload(self) -> dict[str, Any]:
        """The ``error`` object of the HTTP body and of the Realtime ``error`` event."""
        return {"type": self.error_type, "code": self.code, "message": self.message, "param": self.param}

    def http_body(self) -> dict[str, Any]:
        """The JSON body of the HTTP refusal, OpenAI's shape: ``param`` only when a field is at fault."""
        error = self.payload()
        if error["param"] is None:
            del error["param"]
        return {"error": error}


# -- the caller's fault (4xx) --------------------------------------------------------------------------


class ClientError(EdgeError, ProtocolError):
    status = 400
    error_type = "invalid_request_error"
    code = "invalid_request_error"


class BadRequest(ClientError):
    pass


class InvalidParam(BadRequest, BadEvent):
    code = "invalid_value"

    def __init__(self, message: str, *, param: str, code: str | None = None) -> None:
        super().__init__(message, code=code, param=param)


class VoiceRefused(BadRequest, UnknownVoice):
    code = "invalid_value"  # what OpenAI answers for a bad voice

    def __init__(self, message: str, *, param: str) -> None:
        super().__init__(message, param=param)


class BadResidency(BadRequest, BadEvent):
    code = "invalid_residency"


class BadMintRequest(BadRequest):
    pass


class BadCallRequest(BadRequest):
    pass


class BadKeyRequest(BadRequest):
    pass


class BadAdminQuery(BadRequest):
    pass


class NotAuthenticated(ClientError):
    status = 401
    code = "invalid_api_key"


class CredentialTooLarge(NotAuthenticated):
    status = 431
    code = "credential_too_large"


class KeyRevoked(NotAuthenticated):
    code = "api_key_revoked"


class Forbidden(ClientError):
    status = 403
    code = "insufficient_scope"


class ResidencyNotAllowed(Forbidden):
    code = "residency_not_allowed"


class NotFound(ClientError):
    status = 404
    code = "not_found"


class SessionNotFound(NotFound):
    code = "session_not_found"


class KeyNotFound(NotFound):
    code = "key_not_found"


class VoiceNotFound(NotFound):
    code = "voice_not_found"


class BatchNotFound(NotFound):
    code = "batch_not_found"


class RequestTimeout(ClientError):
    status = 408
    code = "request_timeout"


class HandshakeTimeout(RequestTimeout):
    code = "handshake_timeout"


class SessionIdle(RequestTimeout):
    code = "session_idle_timeout"


class SessionExpired(RequestTimeout):
    code = "session_expired"


class Conflict(ClientError):
    status = 409
    code = "conflict"


class SessionTakenOver(Conflict):
    code = "session_taken_over"


class TooManyRequests(ClientError):
    status = 429
    code = "rate_limit_exceeded"


class RateLimited(TooManyRequests):
    code = "rate_limit_exceeded"


class TooManySessions(TooManyRequests):
    code = "session_limit_exceeded"


# -- the edge's or a dependency's fault (5xx) ----------------------------------------------------------


class ServerError(EdgeError):
    status = 500
    error_type = "server_error"
    code = "server_error"


class InternalError(ServerError):
    pass


class ServiceUnavailable(ServerError):
    status = 503
    code = "service_unavailable"


class Draining(ServiceUnavailable):
    code = "edge_draining"


class NoRegionInResidency(ServiceUnavailable):
    code = "no_region_in_residency"


class StoreUnavailable(ServiceUnavailable):
    code = "store_unavailable"


class KeyStoreUnavailable(StoreUnavailable):
    code = "key_store_unavailable"


class VoiceStoreUnavailable(StoreUnavailable):
    code = "voice_store_unavailable"


class BatchStoreUnavailable(StoreUnavailable):
    code = "batch_store_unavailable"


def edge_error(exc: VoicemeshError) -> EdgeError:
    """``exc`` as the edge answers it: itself when it is an ``EdgeError``; a ``wire.errors`` error
    wrapped by the fault the wire gives it (``ProtocolError``: ``ClientError``; any other:
    ``ServiceUnavailable``), with its code, message and ``param``."""
    if isinstance(exc, EdgeError):
        return exc
    kind = ClientError if isinstance(exc, ProtocolError) else ServiceUnavailable
    return kind(exc.message, code=exc.code, param=getattr(exc, "param", None))
