"""Who is connecting: API keys, HS256 JWTs and short-lived client secrets, checked at the handshake.

Browsers cannot set headers on a WebSocket, so the token may also come as the
``openai-insecure-api-key.<token>`` subprotocol, as OpenAI's browser clients send it. Client secrets
(``ek_...``) are minted from an API key by ``POST /v1/realtime/client_secrets`` and count against
the key they were minted from.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import jwt
from litestar.stores.base import Store

from edge.settings import EdgeSettings
from wire.errors import ProtocolError

KEY_SUBPROTOCOL = "openai-insecure-api-key."
SECRET_PREFIX = "ek_"


class NotAuthenticated(ProtocolError):
    code = "invalid_api_key"


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    """The API key's id (a prefix, never the key), the JWT subject, or the minting key's id."""
    via: str


def key_id(api_key: str) -> str:
    return "key_" + api_key[:6] + "…"


def bearer_token(headers: Mapping[str, str], subprotocols: Iterable[str]) -> str | None:
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    for proto in subprotocols:
        if proto.startswith(KEY_SUBPROTOCOL):
            return proto[len(KEY_SUBPROTOCOL) :] or None
    return None


class Authenticator:
    def __init__(self, settings: EdgeSettings, store: Store) -> None:
        self._keys = settings.api_keys
        self._jwt_secret = settings.jwt_secret
        self._ttl_s = settings.client_secret_ttl_s
        self._store = store

    async def authenticate(self, token: str | None) -> Principal:
        if not token:
            raise NotAuthenticated(
                "missing API key: send `Authorization: Bearer KEY` or the openai-insecure-api-key subprotocol"
            )
        for key in self._keys:
            if hmac.compare_digest(key.encode(), token.encode()):
                return Principal(key_id(key), "api_key")
        if token.startswith(SECRET_PREFIX):
            owner = await self._store.get(f"secret:{token}")
            if owner is None:
                raise NotAuthenticated("client secret unknown or expired: mint a new one")
            return Principal(owner.decode(), "client_secret")
        if self._jwt_secret and token.count(".") == 2:
            try:
                claims = jwt.decode(
                    token, self._jwt_secret, algorithms=["HS256"], options={"require": ["exp", "sub"]}
                )
            except jwt.PyJWTError as exc:
                raise NotAuthenticated(f"invalid JWT: {exc}") from exc
            return Principal(f"jwt_{claims['sub']}", "jwt")
        raise NotAuthenticated("invalid API key")

    async def mint_client_secret(self, owner: Principal, ttl_s: int | None = None) -> tuple[str, int]:
        """A fresh ``ek_`` secret for ``owner``; returns ``(value, expires_at)`` (unix seconds)."""
        ttl = min(ttl_s or self._ttl_s, 7200)
        value = SECRET_PREFIX + secrets.token_urlsafe(24)
        await self._store.set(f"secret:{value}", owner.key_id.encode(), expires_in=ttl)
        return value, int(time.time()) + ttl
