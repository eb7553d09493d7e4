"""The region registry: which regions exist, where, and under which residency tags.

Written by the infra tier from Terraform outputs (or by hand); read by every edge's router.
File format (JSON)::

    {"regions": [{"id": "local-a", "url": "http://127.0.0.1:9001",
                  "location": {"lat": 50.11, "lon": 8.68}, "residency": ["eu"], "capacity": 2}]}
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import msgspec

from router.periodic import Periodic
from wire.files import atomic_write

log = logging.getLogger(__name__)


class Location(msgspec.Struct, frozen=True):
    lat: float
    lon: float


class RegionRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    url: str
    """The region's base URL (``http://host:port``, or ``https://`` for TLS: turns then go over
    ``wss`` verified against ``RouterSettings.region_ca_path``): ``/health``, ``/metrics``,
    ``/v1/turns``. The registry never holds a credential: tokens come from the region key set."""
    location: Location = Location(0.0, 0.0)
    residency: list[str] = msgspec.field(default_factory=list)
    capacity: int = 1


class Registry(msgspec.Struct, kw_only=True):
    regions: list[RegionRecord] = msgspec.field(default_factory=list)
    source: str = ""


def load_registry(path: str | Path) -> Registry:
    return msgspec.json.decode(Path(path).read_bytes(), type=Registry)


def dump_registry(registry: Registry, path: str | Path) -> None:
    # Atomic: a reloading edge never reads half a file.
    atomic_write(Path(path), msgspec.json.format(msgspec.json.encode(registry), indent=2))


class RegistryWatcher:
    """Reloads the registry file when it changes (mtime/size polling: works on every filesystem,
    and the infra tier replaces the file atomically). A broken file is logged and ignored: the
    last good registry stays in force."""

    def __init__(
        self, path: str | Path, on_change: Callable[[Registry], None], *, poll_s: float = 1.0
    ) -> None:
        self.path = Path(path)
        self._on_change = on_change
        self._stamp: tuple[int, int] | None = None
        self._polls = Periodic(poll_s, self._poll, name="registry-watcher")
        self.reloads = 0
        self.last_error = ""

    def _current_stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def check(self) -> bool:
        """Reload if the file changed since the last look; True when a new registry was applied."""
        stamp = self._current_stamp()
        if stamp is None or stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            registry = load_registry(self.path)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            self.last_error = f"{self.path}: {exc}"
            log.error("registry %s is invalid, keeping the previous one: %s", self.path, exc)
            return False
        self.last_error = ""
        self.reloads += 1
        self._on_change(registry)
        return True

    def start(self) -> None:
        self._polls.start()

    async def _poll(self) -> None:
        self.check()

    async def aclose(self) -> None:
        await self._polls.aclose()
