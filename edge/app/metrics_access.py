"""Who may read the edge's ``GET /metrics``: the scraper's metrics credential, as a region checks it.

The credential (``vmm_...``, ``voicemesh infra rotate-key --metrics``) lives in the region key set
the edge already reads for its router (``--region-keys``, ``VOICEMESH_REGION_KEYS``): the same
secret reads every region's and every edge's metrics, and nothing else. An admin key reads them
too (an operator with ``curl``). An edge given no region key set (regions without auth, a
development set-up) accepts only an admin key.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from edge.shared.errors import NotAuthenticated
from edge.tenancy.auth import ADMIN, Principal, bearer_token
from wire.region_auth import KEYS_ENV, TokenVerifier
from wire.region_keys import METRICS_PREFIX, KeyFile

Authenticate = Callable[[], Awaitable[Principal]]


class MetricsAccess:
    def __init__(self, region_keys_path: str | None = None) -> None:
        path = os.environ.get(KEYS_ENV, "") if region_keys_path is None else region_keys_path
        self._verifier = TokenVerifier(KeyFile(path)) if path else None

    async def check(self, authorization: str | None, authenticate: Authenticate) -> None:
        """Return when the request may read the metrics; raise ``NotAuthenticated`` (401) otherwise."""
        token = bearer_token({"authorization": authorization or ""}, ()) or ""
        if self._verifier is not None and self._verifier.metrics_refusal(authorization) is None:
            return
        if token.startswith(METRICS_PREFIX):
            why = "no region key set on this edge" if self._verifier is None else "unknown or retired"
            raise NotAuthenticated(
                f"metrics credential refused ({why}): send the current one from `voicemesh infra rotate-key "
                "--metrics` as `Authorization: Bearer vmm_...`"
            )
        if not token:
            raise NotAuthenticated(
                "GET /metrics needs the metrics credential (`Authorization: Bearer vmm_...`) or an admin key"
            )
        (await authenticate()).require(ADMIN)
