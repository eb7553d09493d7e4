"""The front door for the edge drills: the same HAProxy, from the same configuration template, that
``voicemesh up`` puts in front of its edges (``infra/modules/frontdoor-local``).

Terraform renders ``haproxy.cfg.tftpl`` with ``templatefile``; here Python's ``string.Template``
fills the same ``${...}`` placeholders, so the drills exercise the front door users get.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any

from infra.environment import INFRA_ROOT
from voicemesh.processes import free_port, spawn, stop_async, wait_healthy
from wire.errors import VoicemeshError

TEMPLATE = INFRA_ROOT / "modules" / "frontdoor-local" / "haproxy.cfg.tftpl"


class FrontDoorError(VoicemeshError):
    code = "frontdoor_error"


def haproxy_executable() -> str:
    """Debian's haproxy (in /usr/sbin, which a user's PATH may lack)."""
    exe = shutil.which("haproxy", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin")
    if exe is None:
        raise FrontDoorError(
            "haproxy is not installed (the front door): `apt-get install haproxy` or `make setup`"
        )
    return exe


def render(servers: list[tuple[str, int]], *, port: int, stats_port: int, host: str = "127.0.0.1") -> str:
    """The HAProxy configuration for ``servers`` (name, port on ``host``): one ``server`` line each,
    as the Terraform module writes them (their check settings are the template's ``default-server``)."""
    lines = "\n".join(f"    server {name} {host}:{p} check" for name, p in servers)
    return Template(TEMPLATE.read_text()).substitute(
        host=host, port=port, stats_port=stats_port, servers=lines
    )


@dataclass
class FrontDoor:
    """HAProxy on a free loopback port in front of ``servers``; ``stats_url`` answers /health, /stats."""

    servers: list[tuple[str, int]]
    workdir: Path
    port: int = 0
    stats_port: int = 0
    process: Any = field(default=None, repr=False)

    @property
    def stats_url(self) -> str:
        return f"http://127.0.0.1:{self.stats_port}"

    async def start(self) -> int:
        exe = haproxy_executable()
        self.port, self.stats_port = self.port or free_port(), self.stats_port or free_port()
        config, log = self.workdir / "frontdoor.cfg", self.workdir / "frontdoor.log"
        config.write_text(render(self.servers, port=self.port, stats_port=self.stats_port))
        self.process = spawn([exe, "-db", "-f", str(config)], log_path=log)
        await wait_healthy(
            f"{self.stats_url}/health",
            timeout_s=30,
            process=self.process,
            log_path=log,
            what="the front door",
        )
        return self.port

    async def stop(self) -> None:
        if self.process is not None:
            await stop_async(self.process, grace_s=5.0)
            self.process = None


__all__ = ["TEMPLATE", "FrontDoor", "FrontDoorError", "haproxy_executable", "render"]
