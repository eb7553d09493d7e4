"""Who is connecting, and what they may do: API keys, HS256 JWTs and short-lived client secrets.

Browsers cannot set headers on a WebSocket, so the token may also come as the
``openai-insecure-api-key.<token>`` subprotocol, as OpenAI's browser clients send it.

Every credential gives a ``Principal`` with scopes. ``realtime`` opens sessions and mints client
secrets; ``admin`` also reads ``/status`` (the ops page). Admin keys are listed apart from the
ordinary ones (``EdgeSettings.admin_keys``); a JWT is admin when its ``scope`` claim lists
``admin``; a client secret (``ek_...``, see ``edge.client_secrets``) is never admin, whoever minted
it, and counts against the key it was minted from. A token longer than
``LimitSettings.max_credential_bytes`` is refused before any lookup.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import jwt

from edge.client_secrets import SECRET_PREFIX, ClientSecrets
from edge.settings import EdgeSettings
from wire.errors import ProtocolError
from wire.redact import redact_token

KEY_SUBPROTOCOL = "openai-insecure-api-key."
REALTIME = "realtime"
ADMIN = "admin"


class NotAuthenticated(ProtocolError):
    """No credential, or one that is unknown, expired or malformed (HTTP 401)."""

    code = "invalid_api_key"


class CredentialTooLarge(NotAuthenticated):
    """The bearer token is longer than any credential the edge issues (HTTP 431)."""

    code = "credential_too_large"


class Forbidden(ProtocolError):
    """A valid credential without the scope the endpoint needs (HTTP 403)."""

    code = "insufficient_scope"


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    """The API key's id (a prefix, never the key), the JWT subject, or the minting key's id."""
    via: str
    """``api_key``, ``jwt`` or ``client_secret``."""
    scopes: frozenset[str] = frozenset({REALTIME})

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            what = "a client secret" if self.via == "client_secret" else "this credential"
            raise Forbidden(f"{what} does not have the `{scope}` scope: use an admin key")


def key_id(api_key: str) -> str:
    """The prefix tells keys apart in a log; the hash fragment tells apart keys sharing a prefix
    (``vm-...``), which per-key limits and session ownership (``edge/session_snapshot.py``) need."""
    return "key_" + redact_token(api_key) + hashlib.sha256(api_key.encode()).hexdigest()[:16]


def bearer_token(headers: Mapping[str, str], subprotocols: Iterable[str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    for proto in subprotocols:
        if proto.startswith(KEY_SUBPROTOCOL):
            return proto[len(KEY_SUBPROTOCOL) :] or None
    return None


def _jwt_scopes(claim: object) -> frozenset[str]:
    # OAuth style: a space-separated string; a list is accepted too.
    names = claim.split() if isinstance(claim, str) else claim if isinstance(claim, list) else []
    return frozenset({REALTIME} | ({ADMIN} if ADMIN in names else set()))


class Authenticator:
    def __init__(self, settings: EdgeSettings, secrets: ClientSecrets) -> None:
        self._keys = [(k.encode(), frozenset({REALTIME})) for k in settings.api_keys]
        self._keys += [(k.encode(), frozenset({REALTIME, ADMIN})) for k in settings.admin_keys]
        self._jwt_secret = settings.jwt_secret
        self._max_bytes = settings.limits.max_credential_bytes
        self.secrets = secrets

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise NotAuthenticated(
                "missing API key: send `Authorization: Bearer KEY` or the openai-insecure-api-key subprotocol"
            )
        raw = token.encode("utf-8", "surrogatepass")
        if len(raw) > self._max_bytes:
            raise CredentialTooLarge(
                f"credential of {len(raw)} bytes: no key, JWT or client secret is over {self._max_bytes}"
            )
        # Every key is compared (no early exit), so timing does not tell how many keys exist.
        found = [scopes for key, scopes in self._keys if hmac.compare_digest(key, raw)]
        if found:
            return Principal(key_id(token), "api_key", frozenset().union(*found))
        if token.startswith(SECRET_PREFIX):
            owner = await self.secrets.redeem(token)
            if owner is None:
                raise NotAuthenticated("client secret unknown, expired or already used: mint a new one")
            return Principal(owner, "client_secret", frozenset({REALTIME}))
        if self._jwt_secret and token.count(".") == 2:
            try:
                claims = jwt.decode(
                    token, self._jwt_secret, algorithms=["HS256"], options={"require": ["exp", "sub"]}
                )
            except jwt.PyJWTError as exc:
                raise NotAuthenticated(f"invalid JWT: {exc}") from exc
            return Principal(f"jwt_{claims['sub']}", "jwt", _jwt_scopes(claims.get("scope")))
        raise NotAuthenticated("invalid API key")
