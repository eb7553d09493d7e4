"""Where regions are: the distance prior a region's latency starts from before any measurement."""

from __future__ import annotations

import math

from router.registry import Location

_FIBER_KM_PER_S = 200_000.0  # light in glass: ~2/3 c
_EARTH_RADIUS_KM = 6371.0


def distance_km(a: Location, b: Location) -> float:
    """Great-circle distance (haversine)."""
    p1, p2 = math.radians(a.lat), math.radians(b.lat)
    dp, dl = p2 - p1, math.radians(b.lon - a.lon)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def distance_rtt_s(a: Location, b: Location) -> float:
    """A lower bound on the round trip between two places over fibre."""
    return 2 * distance_km(a, b) / _FIBER_KM_PER_S
