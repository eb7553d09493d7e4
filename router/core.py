"""The router: its lifecycle, the regions it knows (from the registry), their ranking, its status.

``Router.run_turn`` hands each turn to its own ``TurnFailover`` (``router.failover``), which tries
regions one ``RegionAttempt`` (``router.attempt``) at a time. The router holds what turns share and
hands each turn only that (``TurnDeps``): region health and breakers (``router.health_board``, fed
by ``router.prober`` and the turns), the connection pool, the retry budget, sticky sessions and the
failover log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping

from router import tracing
from router.api import RoutedEvent, SessionRouting
from router.breaker_storage import BreakerStorage, storage_from_url
from router.breakers import BreakerBoard
from router.failover import TurnDeps, TurnFailover
from router.failover_log import FailoverLog
from router.health import RegionHealth, Score
from router.health_board import HealthBoard
from router.pool import ConnectionPool
from router.prober import HealthProber
from router.registry import Registry, RegistryWatcher, load_registry
from router.settings import RouterSettings
from router.sticky import StickySessions
from wire.bounded_redis import BoundedRedis
from wire.rates import TokenBucket
from wire.region_auth import ClientAuth
from wire.tracing import within
from wire.turn import TurnStart

log = logging.getLogger(__name__)


class Router:
    """``TurnRouter`` over real regions (``async with Router(settings) as r:``)."""

    def __init__(
        self,
        settings: RouterSettings,
        *,
        registry: Registry | None = None,
        storage: BreakerStorage | None = None,
        redis: BoundedRedis | None = None,
    ) -> None:
        """``redis``: the process's Redis client, shared with the edge (its owner closes it); without
        it the router opens its own for ``settings.redis_url``."""
        self.settings = settings
        self.breakers = BreakerBoard(
            storage or storage_from_url(settings.redis_url, namespace=settings.redis_namespace, redis=redis),
            fail_max=settings.breaker_fail_max,
            reset_timeout_s=settings.breaker_reset_s,
        )
        self.health = HealthBoard(settings, self.breakers)
        self.pool = ConnectionPool(
            connect_timeout_s=settings.connect_timeout_s,
            url_of=lambda r: self.regions[r].record.url if r in self.regions else None,
            warm_hold_s=settings.warm_hold_s,
            # The same cached signer the prober uses: one token for every connection and probe.
            auth=ClientAuth.from_paths(settings.region_keys_path, settings.region_ca_path),
        )
        self.prober = HealthProber(settings, self.health)
        self.prober.on_probed = lambda: self.pool.rewarm(self.health.usable)
        self.budget = TokenBucket(rate_per_s=settings.retry_budget_per_s, burst=settings.retry_budget_burst)
        self.sticky = StickySessions(settings.sticky_sessions_max)
        self.failovers = FailoverLog(settings.failover_log_size)
        self.cancelled = {"drained": 0, "dropped": 0}
        """Cancelled turns whose connection was drained back to the pool, or closed."""
        self._turns = TurnDeps(
            settings, self.health, self.pool, self.budget, self.sticky, self.failovers, self.cancelled
        )
        self._watcher: RegistryWatcher | None = None
        if registry is not None:
            self.apply_registry(registry)
        elif settings.registry_path:
            self._watcher = RegistryWatcher(
                settings.registry_path, self.apply_registry, poll_s=settings.registry_poll_s
            )
            self.apply_registry(load_registry(settings.registry_path))
            self._watcher.check()  # remember the file's stamp: no reload of what was just read

    # Lifecycle.
    async def start(self) -> None:
        if self.settings.probe_interval_s > 0:
            await self.prober.probe_all()
        await self.health.refresh()
        self.prober.start()
        if self._watcher is not None:
            self._watcher.start()
        ranked = self.rank(SessionRouting(session_id=""))
        self.pool.keep_warm([r.id for r, _ in ranked[: self.settings.warm_regions]])

    async def __aenter__(self) -> Router:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._watcher is not None:
            await self._watcher.aclose()
        await self.prober.aclose()
        await self.pool.aclose()
        await asyncio.to_thread(self.breakers.close)

    # Registry.
    def apply_registry(self, registry: Registry) -> None:
        for stale in self.health.apply(registry):
            self.pool.forget(stale)  # gone, or its URL changed: old connections go nowhere
        log.info("router: registry has %d regions: %s", len(self.regions), ", ".join(self.regions) or "-")

    @property
    def regions(self) -> Mapping[str, RegionHealth]:
        return self.health.regions

    # Choice.
    def rank(
        self, session: SessionRouting, exclude: frozenset[str] | set[str] = frozenset()
    ) -> list[tuple[RegionHealth, Score]]:
        sticky = self.sticky.get(session.session_id)
        return self.health.rank(session.residency, exclude=exclude, sticky=sticky)

    # The turn.
    def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncGenerator[RoutedEvent, None]:
        """Serve one turn (``TurnRouter``); closing the stream cancels the region's turn."""
        span = tracing.turn_span(start, session.session_id)
        return within(span, TurnFailover(self._turns, session, start, audio).run())

    # Status.
    @property
    def degraded_count(self) -> int:
        return self.failovers.degraded

    def status(self) -> dict[str, object]:
        ranked = {r.id: i for i, (r, _) in enumerate(self.rank(SessionRouting(session_id="")))}
        regions = []
        for r in self.regions.values():
            entry = self.health.status(r)
            entry["rank"] = ranked.get(r.id)
            entry["idle_connections"] = self.pool.idle_count(r.id)
            regions.append(entry)
        return {
            "regions": regions,
            "recent_failovers": self.failovers.as_json(),
            "degraded_turns": self.failovers.degraded,
            "cancelled_turns": dict(self.cancelled),
            "breaker_storage": self.breakers.storage.describe(),
            "retry_budget": {
                "available": round(self.budget.available(), 2),
                "burst": self.budget.burst,
                "refill_per_s": self.budget.rate_per_s,
                "refused": self.budget.refused,
            },
            "registry": {
                "path": self.settings.registry_path,
                "reloads": self._watcher.reloads if self._watcher else 0,
                "error": self._watcher.last_error if self._watcher else "",
            },
            "location": {"lat": self.settings.location.lat, "lon": self.settings.location.lon},
            "handshakes": dict(self.pool.handshakes),
        }
