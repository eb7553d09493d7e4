"""The router: which region serves each turn, and what happens when it fails.

``Router`` (``router.core``) implements ``TurnRouter`` (``router.api``) over real regions:
``async with Router(RouterSettings(registry_path=...)) as r: async for ev in r.run_turn(...)``.
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
