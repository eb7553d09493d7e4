"""The admin API for stored keys, on every edge (admin scope; ``docs/keys.md``):

* ``POST /v1/keys``  make a key: ``{"name", "residency", "max_sessions", "rate_per_s", "burst",
  "voices", "priority", "on_no_region"}``; answers the key and its ``secret``, shown this once
* ``GET /v1/keys``  every key (never a secret nor its hash)
* ``GET /v1/keys/{key_id}``  one key
* ``POST /v1/keys/{key_id}/rotate``  a new secret; ``{"grace_s": N}`` keeps the old one working N s
* ``DELETE /v1/keys/{key_id}``  revoke: refused by every edge within ``KeySettings.cache_s``, and its
  open sessions end (``api_key_revoked``)

Other ``/v1/keys/{key_id}/...`` paths (audit, usage) belong to their own modules. A bad body is a
400 naming the field; an unknown id a 404; an unreachable key store a 503.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, delete, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, SkipValidation

from edge.tenancy.auth import ADMIN, Authenticator, bearer_token
from edge.tenancy.keys import KeyRing


async def _admin_keys(request: Request[Any, Any, Any], auth: Authenticator) -> KeyRing:
    """The edge's key ring, for an admin caller only (401/403 otherwise)."""
    principal = await auth.authenticate(bearer_token(request.headers, []))
    principal.require(ADMIN)
    return auth.keys


@post("/v1/keys", status_code=201)
async def create_key(
    request: Request[Any, Any, Any], authenticator: SkipValidation[Authenticator]
) -> dict[str, Any]:
    keys = await _admin_keys(request, authenticator)
    record, secret = await keys.create(await request.body())
    return {**record.public(), "secret": secret}


@get("/v1/keys")
async def list_keys(
    request: Request[Any, Any, Any], authenticator: SkipValidation[Authenticator]
) -> dict[str, Any]:
    keys = await _admin_keys(request, authenticator)
    return {"object": "list", "data": [r.public() for r in await keys.all()]}


@get("/v1/keys/{key_id:str}")
async def get_key(
    request: Request[Any, Any, Any], authenticator: SkipValidation[Authenticator], key_id: FromPath[str]
) -> dict[str, Any]:
    keys = await _admin_keys(request, authenticator)
    return (await keys.get(key_id)).public()


@post("/v1/keys/{key_id:str}/rotate", status_code=200)
async def rotate_key(
    request: Request[Any, Any, Any], authenticator: SkipValidation[Authenticator], key_id: FromPath[str]
) -> dict[str, Any]:
    keys = await _admin_keys(request, authenticator)
    record, secret = await keys.rotate(key_id, await request.body())
    return {**record.public(), "secret": secret}


@delete("/v1/keys/{key_id:str}", status_code=200)
async def revoke_key(
    request: Request[Any, Any, Any], authenticator: SkipValidation[Authenticator], key_id: FromPath[str]
) -> dict[str, Any]:
    keys = await _admin_keys(request, authenticator)
    return (await keys.revoke(key_id)).public()


def key_route_handlers() -> list[HTTPRouteHandler]:
    """The ``/v1/keys`` routes; add them to the Litestar app's ``route_handlers``, with an ``authenticator``
    dependency (the edge's ``Authenticator``)."""
    return [create_key, list_keys, get_key, rotate_key, revoke_key]


__all__ = ["key_route_handlers"]
