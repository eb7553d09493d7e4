"""The router: which region serves each turn, and what happens when it fails."""

from router.api import Degraded, FailedOver, Routed, RoutedEvent, SessionRouting, TurnRouter
from router.registry import Location, RegionRecord, Registry, dump_registry, load_registry

__all__ = [
    "Degraded",
    "FailedOver",
    "Location",
    "RegionRecord",
    "Registry",
    "Routed",
    "RoutedEvent",
    "SessionRouting",
    "TurnRouter",
    "dump_registry",
    "load_registry",
]
