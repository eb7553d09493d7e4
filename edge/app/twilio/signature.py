"""Twilio's request signature (``X-Twilio-Signature``), checked with the ``twilio`` package's
``RequestValidator`` against the account's auth token: over the full URL Twilio requested (``wss://``
for a media stream's handshake, ``https://`` for a webhook) and, for a webhook, its form fields.

Twilio signs the URL it was given, not the one the edge sees behind TLS termination or a proxy:
``TwilioSettings.public_url`` names it; unset, the request's ``Host`` with Twilio's scheme.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from litestar.connection import ASGIConnection
from twilio.request_validator import RequestValidator

from edge.shared.errors import Forbidden, NotFound
from edge.shared.settings import TwilioSettings

HEADER = "x-twilio-signature"
TOKEN_ENV = "VOICEMESH_TWILIO_AUTH_TOKEN"


def validator(settings: TwilioSettings) -> RequestValidator:
    """The account's validator; the Twilio endpoints are off without an auth token (404: there is
    nothing to retry, as a 503 would say; the message names the setting that turns them on)."""
    if not settings.auth_token:
        raise NotFound(
            f"phone calls are off on this edge: set {TOKEN_ENV} to the Twilio account's auth token",
            code="twilio_not_configured",
        )
    return RequestValidator(settings.auth_token)


def public_url(conn: ASGIConnection[Any, Any, Any, Any], settings: TwilioSettings, scheme: str) -> str:
    """The URL Twilio requested for ``conn`` (``scheme``: ``wss`` or ``https``), query included."""
    path = conn.scope.get("raw_path", b"").decode("latin-1") or conn.scope["path"]
    query = conn.scope.get("query_string", b"").decode("latin-1")
    if settings.public_url:  # (a path prefix a proxy strips is kept: Twilio signed it)
        base = urlsplit(settings.public_url)
        host = base.netloc + base.path.rstrip("/")
        scheme = {"https": scheme, "http": "ws" if scheme == "wss" else "http"}.get(base.scheme, scheme)
    else:
        host = conn.headers.get("host", "")
    return f"{scheme}://{host}{path}" + (f"?{query}" if query else "")


def check(
    conn: ASGIConnection[Any, Any, Any, Any], settings: TwilioSettings, scheme: str,
    params: Mapping[str, str] | None = None,
) -> str:  # fmt: skip
    """Refuse (403) a request not signed by Twilio with the account's token; returns the URL checked."""
    checker = validator(settings)
    url = public_url(conn, settings, scheme)
    signature = conn.headers.get(HEADER)
    if not signature:
        raise Forbidden(
            f"no {HEADER} header: only Twilio may open this endpoint", code="twilio_signature_missing"
        )
    if not checker.validate(url, dict(params or {}), signature):
        raise Forbidden(
            f"{HEADER} does not match {url} signed with {TOKEN_ENV}: check the auth token, and "
            "VOICEMESH_TWILIO_PUBLIC_URL when the edge is behind a proxy",
            code="twilio_signature_invalid",
        )
    return url


__all__ = ["HEADER", "check", "public_url", "validator"]
