"""Who is connecting, and what they may do: API keys (from the environment, or stored as data:
``vm_...``, ``edge/tenancy/keys.py``), HS256 JWTs and short-lived client secrets. Each credential brings a
``KeyPolicy``: the defaults for an environment key, a stored key's own, a JWT's claims, and for a
client secret its minting key's.

Browsers cannot set headers on a WebSocket, so the token may also come as the
``openai-insecure-api-key.<token>`` subprotocol, as OpenAI's browser clients send it.

Every credential gives a ``Principal`` with scopes. ``realtime`` opens sessions and mints client
secrets; ``admin`` also reads ``/status`` (the ops page). Admin keys are listed apart from the
ordinary ones (``EdgeSettings.admin_keys``); a JWT is admin when its ``scope`` claim lists
``admin``; a client secret (``ek_...``, see ``edge.tenancy.client_secrets``) is never admin, whoever minted
it, and counts against the key it was minted from. A token longer than
``LimitSettings.max_credential_bytes`` is refused before any lookup.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import jwt

from edge.shared.errors import CredentialTooLarge, Forbidden, NotAuthenticated
from edge.shared.key_policy import DEFAULT_POLICY, InvalidPolicy, KeyPolicy, policy_claims, policy_from_claims
from edge.shared.settings import EdgeSettings
from edge.tenancy.client_secrets import SECRET_PREFIX, ClientSecrets
from edge.tenancy.key_record import open_key_store
from edge.tenancy.keys import SECRET_PREFIX as KEY_PREFIX
from edge.tenancy.keys import KeyRing
from wire.redact import redact_token

KEY_SUBPROTOCOL = "openai-insecure-api-key."
REALTIME = "realtime"
ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Principal:
    key_id: str
    """The API key's id (a prefix, never the key), the JWT subject, or the minting key's id."""
    via: str
    """``api_key``, ``jwt`` or ``client_secret``."""
    scopes: frozenset[str] = frozenset({REALTIME})
    policy: KeyPolicy = DEFAULT_POLICY
    """Residency, limits, voices and priority class (``edge/shared/key_policy.py``)."""
    stored_key: bool = False
    """``key_id`` is a stored key (``edge/tenancy/keys.py``): revoking it ends this credential's sessions."""
    residency: frozenset[str] | None = None
    """A narrowing of ``policy.residency`` the credential carries (a client secret minted with
    ``voicemesh.residency``); applied per session by ``edge/tenancy/session_tenancy.py``."""

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            what = "a client secret" if self.via == "client_secret" else "this credential"
            raise Forbidden(f"{what} does not have the `{scope}` scope: use an admin key")


def key_id(api_key: str) -> str:
    """The prefix tells keys apart in a log; the hash fragment tells apart keys sharing a prefix
    (``vm-...``), which per-key limits and session ownership (``edge/realtime/session_snapshot.py``) need."""
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
    def __init__(self, settings: EdgeSettings, secrets: ClientSecrets, keys: KeyRing | None = None) -> None:
        self._keys = [(k.encode(), frozenset({REALTIME})) for k in settings.api_keys]
        self._keys += [(k.encode(), frozenset({REALTIME, ADMIN})) for k in settings.admin_keys]
        self._jwt_secret = settings.jwt_secret
        self._max_bytes = settings.limits.max_credential_bytes
        self.secrets = secrets
        self.keys = keys or KeyRing(open_key_store(None), settings.keys, settings.voices)
        """Keys stored as data (``vm_...``): looked up by the hash of the secret."""

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
        if token.startswith(KEY_PREFIX):
            record = await self.keys.authenticate(token)
            if record is None:
                raise NotAuthenticated(
                    "API key unknown, revoked or rotated: ask your operator for the current one"
                )
            return Principal(record.id, "api_key", frozenset({REALTIME}), record.policy(), stored_key=True)
        if token.startswith(SECRET_PREFIX):
            return await self._redeem(token)
        if self._jwt_secret and token.count(".") == 2:
            try:
                claims = jwt.decode(
                    token, self._jwt_secret, algorithms=["HS256"], options={"require": ["exp", "sub"]}
                )
            except jwt.PyJWTError as exc:
                raise NotAuthenticated(f"invalid JWT: {exc}") from exc
            try:
                policy = policy_from_claims(claims)
            except InvalidPolicy as exc:
                raise NotAuthenticated(f"invalid JWT claim: {exc}") from exc
            return Principal(f"jwt_{claims['sub']}", "jwt", _jwt_scopes(claims.get("scope")), policy)
        raise NotAuthenticated("invalid API key")

    async def _redeem(self, token: str) -> Principal:
        """A client secret: its minting key's id and policy (a stored key's as it is now)."""
        minted = await self.secrets.redeem(token)
        if minted is None:
            raise NotAuthenticated("client secret unknown, expired or already used: mint a new one")
        policy = DEFAULT_POLICY
        if minted.stored_key:
            record = await self.keys.live(minted.owner)
            if record is None:
                raise NotAuthenticated("the API key this client secret was minted from was revoked")
            policy = record.policy()
        elif minted.policy:
            policy = policy_from_claims(minted.policy)
        narrowed = None if minted.residency is None else frozenset(minted.residency)
        return Principal(
            minted.owner, "client_secret", frozenset({REALTIME}), policy, minted.stored_key, narrowed
        )

    def mint_claims(self, principal: Principal) -> dict[str, object] | None:
        """What a client secret minted by ``principal`` carries of its policy: a JWT's own (a
        stored key's is read again at the handshake; an env key has the defaults)."""
        if principal.stored_key or principal.policy == DEFAULT_POLICY:
            return None
        return policy_claims(principal.policy)
