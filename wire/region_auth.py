"""Region tokens: how an edge proves to a region that it is one of ours, and how the region checks.

A token is an HS256 JWT signed with the newest active key of the key set (``wire.region_keys``),
``kid`` in its header, claims ``aud`` (``voicemesh-region``), ``iat``, ``exp`` (``TOKEN_TTL_S``
later) and ``sub`` (who minted it, for the region's log). It travels as
``Authorization: Bearer <token>`` on the turn WebSocket's handshake and on every HTTP request.

The region checks it at the handshake, which is what matters: a pooled connection may outlive its
token, but it was admitted by a valid one, and a new connection needs a fresh token. Signers cache a
token and mint a new one when half its life is gone (or when the key set's signing key changed),
so a probe every second costs one HMAC every couple of minutes.

``GET /metrics`` also takes the metrics credential (``wire.region_keys``: a ``vmm_`` bearer secret
a region knows only by its SHA-256), so a scraper that cannot mint tokens can read it; that
credential is refused everywhere else (``TokenVerifier.refusal``). Checked in constant time
against every accepted hash.

``ClientAuth`` bundles what a client of the region needs (a signer and an optional TLS context
trusting the regions' CA). ``ClientAuth.from_env()`` reads ``VOICEMESH_REGION_KEYS`` (key file) and
``VOICEMESH_REGION_CA`` (PEM CA bundle): the default of every client that is not given one.
"""

from __future__ import annotations

import functools
import hmac
import os
import ssl
import time
from dataclasses import dataclass
from pathlib import Path

import jwt

from wire.region_keys import LEEWAY_S, MAX_TOKEN_TTL_S, METRICS_PREFIX, KeyFile, hash_metrics_token

AUDIENCE = "voicemesh-region"
TOKEN_TTL_S = 240.0
"""Lifetime of a minted token: short, and under ``MAX_TOKEN_TTL_S`` (what regions accept)."""
MAX_HEADER_CHARS = 2048
"""A longer Authorization header is refused before any parsing."""
KEYS_ENV = "VOICEMESH_REGION_KEYS"
CA_ENV = "VOICEMESH_REGION_CA"


class TokenSigner:
    """Mints region tokens with the key set's signing key."""

    def __init__(self, keys: KeyFile, *, subject: str = "edge", ttl_s: float = TOKEN_TTL_S) -> None:
        if not 0 < ttl_s <= MAX_TOKEN_TTL_S:
            raise ValueError(f"token lifetime must be in (0, {MAX_TOKEN_TTL_S:.0f}] s")
        self._keys = keys
        self._subject = subject
        self._ttl_s = ttl_s
        self._token = ""
        self._kid = ""
        self._refresh_at = 0.0

    def token(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        key = self._keys.current().signing_key(now)
        if not self._token or now >= self._refresh_at or key.kid != self._kid:
            issued = int(now)
            claims = {"aud": AUDIENCE, "sub": self._subject, "iat": issued, "exp": issued + int(self._ttl_s)}
            self._token = jwt.encode(claims, key.secret_bytes, algorithm="HS256", headers={"kid": key.kid})
            self._kid = key.kid
            self._refresh_at = issued + self._ttl_s / 2
        return self._token

    @property
    def kid(self) -> str:
        """The key of the last token minted."""
        return self._kid

    def authorization(self) -> str:
        return f"Bearer {self.token()}"


class TokenVerifier:
    """Checks a request's ``Authorization`` header against the key set."""

    def __init__(self, keys: KeyFile) -> None:
        self.keys = keys

    def refusal(self, authorization: str | None, now: float | None = None) -> str | None:
        """None when the header carries a valid region token; otherwise why not (safe to send back)."""
        token, reason = _bearer(authorization)
        if reason is not None:
            return reason
        if token.startswith(METRICS_PREFIX):
            return "a metrics credential reads GET /metrics only"
        now = time.time() if now is None else now
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError:
            return "malformed token"
        key = self.keys.current().accepted(now).get(kid) if isinstance(kid, str) else None
        if key is None:
            return "token signed by an unknown or retired key"
        try:
            claims = jwt.decode(
                token, key.secret_bytes, algorithms=["HS256"], audience=AUDIENCE, leeway=LEEWAY_S,
                options={"require": ["exp", "iat", "aud"], "verify_iat": False},
            )  # fmt: skip
        except jwt.ExpiredSignatureError:
            return "token expired"
        except jwt.InvalidAudienceError:
            return "token not meant for a region"
        except jwt.PyJWTError:
            return "invalid token"
        issued, expires = claims["iat"], claims["exp"]
        if not isinstance(issued, int | float) or issued > now + LEEWAY_S:
            return "token issued in the future"
        if expires - issued > MAX_TOKEN_TTL_S:
            return "token lifetime too long"
        return None

    def metrics_refusal(self, authorization: str | None, now: float | None = None) -> str | None:
        """For ``GET /metrics``: None for a valid region token or an accepted metrics credential."""
        token, reason = _bearer(authorization)
        if reason is not None or not token.startswith(METRICS_PREFIX):
            return self.refusal(authorization, now)
        digest = hash_metrics_token(token)
        hashes = self.keys.current().metrics_hashes(time.time() if now is None else now)
        # Every hash is compared (no early exit), each in constant time.
        matched = [hmac.compare_digest(digest, known) for known in hashes]
        return None if any(matched) else "unknown or retired metrics credential"


def _bearer(authorization: str | None) -> tuple[str, str | None]:
    """(the bearer credential, None), or ("", why the header is unusable)."""
    if not authorization:
        return "", "missing credential: send Authorization: Bearer <region token>"
    if len(authorization) > MAX_HEADER_CHARS:
        return "", "credential too long"
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return "", "expected Authorization: Bearer <region token>"
    return token.strip(), None


def client_ssl_context(ca_path: str | Path) -> ssl.SSLContext:
    """Verify the region's certificate against this CA bundle (hostname checked too)."""
    return ssl.create_default_context(cafile=str(ca_path))


@dataclass(frozen=True)
class ClientAuth:
    """What a client of the region presents: a token signer and the CA it trusts for wss/https."""

    signer: TokenSigner | None = None
    ssl: ssl.SSLContext | None = None

    def headers(self) -> dict[str, str]:
        return {"Authorization": self.signer.authorization()} if self.signer is not None else {}

    @classmethod
    def from_paths(cls, keys_path: str | Path | None, ca_path: str | Path | None = None) -> ClientAuth:
        return _client_auth(str(keys_path or ""), str(ca_path or ""))

    @classmethod
    def from_env(cls) -> ClientAuth:
        return cls.from_paths(os.environ.get(KEYS_ENV), os.environ.get(CA_ENV))


@functools.lru_cache(maxsize=16)
def _client_auth(keys_path: str, ca_path: str) -> ClientAuth:
    # One signer per key file per process: its cached token is shared by every connection.
    return ClientAuth(
        signer=TokenSigner(KeyFile(keys_path)) if keys_path else None,
        ssl=client_ssl_context(ca_path) if ca_path else None,
    )
