"""The active half of region health: poll every region's ``GET /health`` on a short interval."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

import httpx
import msgspec

from router.health import HealthReport, RegionHealth
from router.periodic import Periodic
from router.settings import RouterSettings

log = logging.getLogger(__name__)

_decode_report = msgspec.json.Decoder(HealthReport).decode


class HealthProber:
    """Polls ``/health`` of every region in a background task and feeds ``RegionHealth``."""

    def __init__(self, settings: RouterSettings, regions: Callable[[], Iterable[RegionHealth]]) -> None:
        self._settings = settings
        self._regions = regions
        self._client = httpx.AsyncClient(timeout=settings.probe_timeout_s)
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
        await asyncio.gather(*(self.probe(r) for r in list(self._regions())))

    async def probe(self, region: RegionHealth) -> None:
        t0 = time.perf_counter()
        try:
            resp = await self._client.get(region.record.url.rstrip("/") + "/health")
            # 503 still carries a report (warming up, draining): read it rather than guess.
            report = _decode_report(resp.content)
            if resp.status_code >= 500 and report.ready:
                report = msgspec.structs.replace(report, status=f"http {resp.status_code}")
        except (httpx.HTTPError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            if region.probe_ok is not False:
                log.warning("region %s: health probe failed: %s", region.id, exc or type(exc).__name__)
            region.observe_probe(None, 0.0, f"{type(exc).__name__}: {exc}")
            return
        region.observe_probe(report, time.perf_counter() - t0)

    async def aclose(self) -> None:
        await self._ticks.aclose()
        await self._client.aclose()
