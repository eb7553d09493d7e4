"""Short-lived ``ek_`` client secrets: minted from an API key for a browser, checked at the handshake.

A secret is stored under the SHA-256 of its value, never the value itself: whoever reads the store
(Redis is shared by every edge) learns who minted what and when it expires, not a usable secret.
A secret may be single-use (``voicemesh.single_use`` in the mint request, a voicemesh extension of
OpenAI's ``POST /v1/realtime/client_secrets``): the handshake then takes it out of the store in one
atomic step, so of two sockets racing with the same secret one is refused. Secrets never carry the
admin scope, and cannot mint other secrets.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from typing import Any

import msgspec

from edge.shared.errors import BadMintRequest
from edge.shared.json_body import json_object
from edge.shared.key_policy import InvalidPolicy, policy_from_claims
from edge.stores.base import EdgeStore

SECRET_PREFIX = "ek_"
MIN_TTL_S = 10
MAX_TTL_S = 7200


class Redeemed(msgspec.Struct):
    """What a live secret says about who minted it."""

    owner: str
    """The minting key's id."""
    single_use: bool = False
    policy: dict[str, Any] | None = None
    """The minting credential's policy (``edge/shared/key_policy.py`` fields), for a JWT; ``None``: the
    defaults, or the stored key's current policy when ``stored_key``."""
    stored_key: bool = False
    """Minted from a stored key (``edge/tenancy/keys.py``): the handshake reads the key's policy then, and
    refuses the secret once the key is revoked."""
    residency: list[str] | None = None
    """The mint request's ``voicemesh.residency``: a narrowing of the key's
    (``edge/tenancy/session_tenancy.py``)."""


def digest(value: str) -> str:
    """What the store keys a secret by: its SHA-256, hex."""
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _key(value: str) -> str:
    return "secret:" + digest(value)


@dataclass(frozen=True, slots=True)
class MintRequest:
    """What a client asked for: a lifetime (``None``: the edge's default), single use or not, and the
    ``session`` object echoed back as OpenAI does."""

    ttl_s: int | None = None
    single_use: bool = False
    session: dict[str, Any] | None = None
    residency: frozenset[str] | None = None
    """``voicemesh.residency``: narrows the key's residency for the sessions the secret opens
    (``edge/tenancy/session_tenancy.py``; checked against the key's when minting)."""

    @classmethod
    def parse(cls, raw: bytes) -> MintRequest:
        """The request from the raw body; anything else than the documented shape is a ``BadMintRequest``."""
        if not raw.strip():
            return cls()
        body = json_object(raw, BadMintRequest)
        ttl = _ttl(body.get("expires_after"))
        session = body.get("session")
        if session is not None and not isinstance(session, dict):
            raise BadMintRequest("session must be an object")
        ext = body.get("voicemesh")
        if ext is None:
            ext = {}
        if not isinstance(ext, dict):
            raise BadMintRequest('voicemesh must be an object, e.g. {"single_use": true}')
        single = ext.get("single_use", False)
        if not isinstance(single, bool):
            raise BadMintRequest("voicemesh.single_use must be true or false")
        try:
            residency = policy_from_claims({"residency": ext.get("residency")}).residency
        except InvalidPolicy as exc:
            raise BadMintRequest(f"voicemesh.{exc}") from exc
        return cls(ttl_s=ttl, single_use=single, session=session, residency=residency)


def _ttl(expires_after: object) -> int | None:
    if expires_after is None:
        return None
    if not isinstance(expires_after, dict):
        raise BadMintRequest('expires_after must be an object, e.g. {"anchor": "created_at", "seconds": 600}')
    seconds = expires_after.get("seconds")
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not MIN_TTL_S <= seconds <= MAX_TTL_S:
        raise BadMintRequest(f"expires_after.seconds must be an integer in [{MIN_TTL_S}, {MAX_TTL_S}]")
    return seconds


class ClientSecrets:
    """Mints and redeems client secrets in ``store`` (shared by edges when it is Redis)."""

    def __init__(self, store: EdgeStore, *, default_ttl_s: int) -> None:
        self._store = store
        self._default_ttl_s = default_ttl_s

    async def mint(
        self, owner_key_id: str, request: MintRequest, *, policy: dict[str, Any] | None = None,
        stored_key: bool = False,
    ) -> tuple[str, int]:  # fmt: skip
        """A fresh secret for the key ``owner_key_id`` (carrying its ``policy`` fields, or marked
        as a stored key's); returns ``(value, expires_at)`` (unix s)."""
        ttl = min(request.ttl_s or self._default_ttl_s, MAX_TTL_S)
        value = SECRET_PREFIX + secrets.token_urlsafe(24)
        residency = None if request.residency is None else sorted(request.residency)
        minted = Redeemed(owner_key_id, request.single_use, policy, stored_key, residency)
        record = msgspec.json.encode(minted)
        await self._store.set(_key(value), record, expires_in=ttl)
        return value, int(time.time()) + ttl

    async def redeem(self, value: str) -> Redeemed | None:
        """Who minted ``value`` if it is a live secret (a single-use one is spent), else ``None``."""
        key = _key(value)
        raw = await self._store.get(key)
        if raw is None:
            return None
        record = msgspec.json.decode(raw, type=Redeemed)
        if record.single_use and await self._store.take(key) is None:
            return None  # another socket spent it first
        return record


__all__ = ["SECRET_PREFIX", "ClientSecrets", "MintRequest", "Redeemed", "digest"]
