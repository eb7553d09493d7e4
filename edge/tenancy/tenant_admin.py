"""Admin reads of a key's books, on any edge (admin scope; ``docs/tenants.md``):

* ``GET /v1/keys/{key_id}/audit?limit=N``  the key's latest turns, newest first (``edge/tenancy/audit.py``)
* ``GET /v1/keys/{key_id}/usage``  the key's usage totals (``edge/tenancy/usage.py``)

``key_id`` is the id sessions of the key carry (``state.key_id``: ``key_...`` for a key,
``jwt_<sub>`` for a JWT). With the edges' shared Redis every edge answers for every edge's turns.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from litestar import Request, get
from litestar.connection import ASGIConnection
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, SkipValidation

from edge.shared.errors import BadAdminQuery
from edge.tenancy.accounting import AUDIT_CAP, Accounting
from edge.tenancy.auth import ADMIN, Principal

Authenticate = Callable[[ASGIConnection[Any, Any, Any, Any], list[str]], Awaitable[Principal]]
"""The edge's credential check (the Litestar app's, ``asgi.py``), bounded in time."""

DEFAULT_LIMIT = 50
MAX_KEY_ID_CHARS = 128


def _limit(raw: str | None) -> int:
    if raw is None:
        return DEFAULT_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= AUDIT_CAP:
        raise BadAdminQuery(f"limit must be a whole number from 1 to {AUDIT_CAP}")
    return int(raw)


def _key_id(key_id: str) -> str:
    if not 0 < len(key_id) <= MAX_KEY_ID_CHARS:
        raise BadAdminQuery(f"key id must be 1 to {MAX_KEY_ID_CHARS} characters")
    return key_id


def tenant_route_handlers(authenticate: Authenticate) -> list[HTTPRouteHandler]:
    async def admin(request: Request[Any, Any, Any]) -> None:
        (await authenticate(request, [])).require(ADMIN)

    @get("/v1/keys/{key_id:str}/audit")
    async def key_audit(
        request: Request[Any, Any, Any], accounting: SkipValidation[Accounting], key_id: FromPath[str]
    ) -> dict[str, Any]:
        await admin(request)
        limit = _limit(request.query_params.get("limit"))
        records = await accounting.audit.recent(_key_id(key_id), limit)
        return {"key_id": key_id, "turns": msgspec.to_builtins(records)}

    @get("/v1/keys/{key_id:str}/usage")
    async def key_usage(
        request: Request[Any, Any, Any], accounting: SkipValidation[Accounting], key_id: FromPath[str]
    ) -> dict[str, Any]:
        await admin(request)
        return {"key_id": key_id, "usage": await accounting.usage.totals(_key_id(key_id))}

    return [key_audit, key_usage]


__all__ = ["tenant_route_handlers"]
