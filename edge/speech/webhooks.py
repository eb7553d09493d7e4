"""Signed webhooks, as OpenAI sends them (the Standard Webhooks scheme): the stock SDK's
``client.webhooks.verify_signature(body, headers, secret=...)`` (or ``unwrap``) checks ours.

Headers: ``webhook-id`` (the same on every retry of one event: receivers drop repeats),
``webhook-timestamp`` (Unix seconds) and ``webhook-signature``: ``v1,`` + base64 of HMAC-SHA256 over
``{id}.{timestamp}.{body}``, keyed with the secret (``whsec_`` + base64 of its bytes).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

import httpx
from httpx_secure import SSRFProtectionError

SECRET_PREFIX = "whsec_"


class WebhookFailed(Exception):
    """A delivery the receiver did not acknowledge with a 2xx (or never answered)."""


class WebhookRefused(WebhookFailed):
    """A delivery the edge would not make: the receiver's address is not one webhooks may reach
    (``edge/shared/egress.py``). Trying again would not change that."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signing_key(secret: str) -> bytes:
    """The HMAC key: a ``whsec_`` secret's base64 bytes (``binascii.Error`` when it is not base64),
    else the secret's own bytes (as the SDK reads it)."""
    if secret.startswith(SECRET_PREFIX):
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    return secret.encode()


def signed_headers(secret: str, event_id: str, body: bytes, *, now: float | None = None) -> dict[str, str]:
    timestamp = str(int(time.time() if now is None else now))
    signed = f"{event_id}.{timestamp}.".encode() + body
    signature = base64.b64encode(hmac.new(signing_key(secret), signed, hashlib.sha256).digest()).decode()
    return {
        "webhook-id": event_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": f"v1,{signature}",
        "content-type": "application/json",
        "user-agent": "voicemesh-webhooks/1",
    }


async def deliver(http: httpx.AsyncClient, url: str, secret: str, event_id: str, body: bytes) -> None:
    """One delivery; ``WebhookFailed`` unless the receiver answered 2xx."""
    try:
        reply = await http.post(url, content=body, headers=signed_headers(secret, event_id, body))
    except SSRFProtectionError as exc:
        raise WebhookRefused(
            f"refused: {exc.hostname} resolved to {exc.ip_addr}, not a public address"
        ) from exc
    except httpx.HTTPError as exc:
        raise WebhookFailed(f"{type(exc).__name__}: {exc}") from exc
    if not reply.is_success:
        raise WebhookFailed(f"HTTP {reply.status_code}")


__all__ = ["WebhookFailed", "WebhookRefused", "deliver", "new_secret", "signed_headers", "signing_key"]
