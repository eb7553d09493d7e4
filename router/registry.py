"""The region registry: which regions exist, where, and under which residency tags.

Written by the infra tier from Terraform outputs (or by hand); read by every edge's router.
File format (JSON)::

    {"regions": [{"id": "local-a", "url": "http://127.0.0.1:9001",
                  "location": {"lat": 50.11, "lon": 8.68}, "residency": ["eu"], "capacity": 2}]}
"""

from __future__ import annotations

from pathlib import Path

import msgspec


class Location(msgspec.Struct, frozen=True):
    lat: float
    lon: float


class RegionRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    url: str
    """The region's base URL (``http://host:port``): ``/health``, ``/metrics``, ``/v1/turns``."""
    location: Location = Location(0.0, 0.0)
    residency: list[str] = msgspec.field(default_factory=list)
    capacity: int = 1


class Registry(msgspec.Struct, kw_only=True):
    regions: list[RegionRecord] = msgspec.field(default_factory=list)
    source: str = ""


def load_registry(path: str | Path) -> Registry:
    return msgspec.json.decode(Path(path).read_bytes(), type=Registry)


def dump_registry(registry: Registry, path: str | Path) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_bytes(msgspec.json.format(msgspec.json.encode(registry), indent=2))
    tmp.replace(path)  # atomic: a reloading edge never reads half a file
