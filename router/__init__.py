"""The router: which region serves each turn, and what happens when it fails.

``Router`` (``router.core``) implements ``TurnRouter`` (``router.api``) over real regions:
``async with Router(RouterSettings(registry_path=...)) as r: async for ev in r.run_turn(...)``.

One turn's path: ``router.failover`` (the per-turn loop: which region next, when to degrade) runs
one ``router.attempt`` per region (send, read under ``router.deadlines``, hand the connection back
to ``router.pool``). What turns share, handed to each turn as ``failover.TurnDeps`` (never the
``Router`` itself): ``router.health_board`` (the one owner of region health: ``router.health``
measures and ``router.breakers``; the prober, the attempts' deadlines and the failover loop report
to it; prior from ``router.geo``, ranking in ``router.choice``), ``router.sticky``,
``router.failover_log``. ``router.testing`` is a scripted stand-in region for the router's tests.
"""

from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting, TurnRouter
from router.core import Router
from router.registry import Location, RegionRecord, Registry, RegistryWatcher, dump_registry, load_registry
from router.settings import RouterSettings

__all__ = [
    "Degraded",
    "FailedOver",
    "Location",
    "RegionRecord",
    "Registry",
    "RegistryWatcher",
    "Routed",
    "RoutedEvent",
    "Router",
    "RouterSettings",
    "SessionRouting",
    "TurnRouter",
    "dump_registry",
    "load_registry",
]
