"""The router: which region serves each turn, and what happens when it fails.

``Router`` (``router.core``) implements ``TurnRouter`` (``router.api``) over real regions:
``async with Router(RouterSettings(registry_path=...)) as r: async for ev in r.run_turn(...)``.

One turn's path: ``router.failover`` (the per-turn loop: which region next, when to degrade) runs
one ``router.attempt`` per region (send, read under ``router.deadlines``, hand the connection back
to ``router.pool``). What turns share: ``router.health`` (fed by ``router.prober``, prior from
``router.geo``), ``router.choice`` (ranking), ``router.breakers``, ``router.sticky``,
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
