"""The active half of region health: poll every region's ``GET /health`` on a short interval.

Each probe carries a region token (``wire.region_auth``): without one a region answers only
ready/not-ready, with none of the load figures the router ranks regions by.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import httpx
import msgspec

from router.health import HealthReport, RegionHealth
from router.health_board import HealthBoard
from router.periodic import Periodic
from router.settings import RouterSettings
from wire.region_auth import ClientAuth
from wire.region_keys import KeySetError

log = logging.getLogger(__name__)

_decode_report = msgspec.json.Decoder(HealthReport).decode


class HealthProber:
    """Polls ``/health`` of every region in a background task and reports to the ``HealthBoard``."""

    def __init__(self, settings: RouterSettings, board: HealthBoard) -> None:
        self._settings = settings
        self._board = board
        self.auth = ClientAuth.from_paths(settings.region_keys_path, settings.region_ca_path)
        """Shared with the connection pool: one token signer for probes and turns."""
        if self.auth.signer is None:
            log.warning("no region key set configured: regions will refuse this router's turns")
        self._client = httpx.AsyncClient(
            timeout=settings.probe_timeout_s, verify=self.auth.ssl if self.auth.ssl is not None else True
        )
        self._ticks = Periodic(settings.probe_interval_s, self._tick, name="router-health-probes")
        self.on_probed: Callable[[], None] | None = None

    def start(self) -> None:
        if self._settings.probe_interval_s > 0:
            self._ticks.start()  # the first round ran in ``Router.start``

    async def _tick(self) -> None:
        await self.probe_all()
        if self.on_probed is not None:
            self.on_probed()

    async def probe_all(self) -> None:
        await asyncio.gather(*(self.probe(r) for r in list(self._board.regions.values())))

    async def probe(self, region: RegionHealth) -> None:
        t0 = time.perf_counter()
        try:
            resp = await self._client.get(
                region.record.url.rstrip("/") + "/health", headers=self.auth.headers()
            )
            if resp.status_code == 401:
                raise httpx.HTTPStatusError(
                    f"refused our credential: {resp.text[:200]}", request=resp.request, response=resp
                )
            # 503 still carries a report (warming up, draining): read it rather than guess.
            report = _decode_report(resp.content)
            if resp.status_code >= 500 and report.ready:
                report = msgspec.structs.replace(report, status=f"http {resp.status_code}")
        except (httpx.HTTPError, msgspec.DecodeError, msgspec.ValidationError, KeySetError) as exc:
            if region.probe_ok is not False:
                log.warning("region %s: health probe failed: %s", region.id, exc or type(exc).__name__)
            timed_out = isinstance(exc, httpx.TimeoutException)
            self._board.probed(region, None, 0.0, f"{type(exc).__name__}: {exc}", timed_out=timed_out)
            return
        self._board.probed(region, report, time.perf_counter() - t0)

    async def aclose(self) -> None:
        await self._ticks.aclose()
        await self._client.aclose()
