"""The deployment a drill exercises: the Terraform-provisioned local regions plus the edge.

It is found through the region registry (written by ``voicemesh infra up`` from Terraform's
outputs) and the edge's URL; when it is not running, ``voicemesh up --detach`` starts it, and a
crashed region is brought back by ``voicemesh infra up --env local`` (Terraform replaces the dead
process). Proxies are placed in front of regions by pointing the registry at them (the edge reloads
the registry without restarting); the original registry is always put back.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from voicemesh.drills.caller_state import EdgeTarget
from voicemesh.drills.edges import EdgeFleet
from voicemesh.drills.faults import FaultProxy, Undo
from voicemesh.processes import ProcessStartError, listening_pid, read_pid, stop_async, wait_healthy
from wire.errors import VoicemeshError
from wire.files import atomic_write
from wire.region_auth import ClientAuth

Report = Callable[[str], None]
Step = Callable[[Report], Awaitable[None]]


class DeploymentError(VoicemeshError):
    code = "deployment_error"


@dataclass(frozen=True)
class RegionInfo:
    id: str
    url: str
    capacity: int = 1
    pid_file: str | None = None

    @property
    def port(self) -> int:
        return int(urlsplit(self.url).port or 80)


def voicemesh_bin() -> str:
    """The ``voicemesh`` executable of this interpreter's environment."""
    here = Path(sys.executable).parent / "voicemesh"
    return str(here) if here.exists() else (shutil.which("voicemesh") or "voicemesh")


@dataclass
class Deployment:
    edge: EdgeTarget
    registry_path: Path
    env: str = "local"
    start: Step | None = None
    """Starts everything when it is not running (default: ``voicemesh up --detach``)."""
    restorer: Step | None = None
    """Brings a killed region back (default: ``voicemesh infra up --env ENV --registry PATH``)."""
    extra_env: dict[str, str] = field(default_factory=dict)
    region_auth: ClientAuth = field(default_factory=ClientAuth)
    """Region tokens: a region's full ``/health`` (load, queue) needs one; the bare one says ready."""
    region_keys_path: Path | None = None
    """The region key set edges sign with (default: ``region-keys.json`` beside the registry)."""
    fleet: EdgeFleet | None = None
    """The edge drills' edges (``voicemesh/drills/edges.py``): started by the runner for them."""

    def edge_fleet(self, count: int, *, drain_s: float = 20.0) -> EdgeFleet:
        """``count`` edges of their own on this deployment's regions, sharing a Redis of their own."""
        return EdgeFleet(
            voicemesh_bin(),
            self.registry_path,
            self.region_keys_path or self.registry_path.parent / "region-keys.json",
            self.edge.api_key,
            self.edge.admin_key or self.edge.api_key,
            count=count,
            drain_s=drain_s,
        )

    def regions(self) -> list[RegionInfo]:
        if not self.registry_path.exists():
            raise DeploymentError(
                f"no region registry at {self.registry_path}: run `voicemesh infra up --env {self.env}` "
                "(or `voicemesh up --detach`) first"
            )
        data = json.loads(self.registry_path.read_bytes())
        return [
            RegionInfo(
                id=str(r["id"]),
                url=str(r["url"]),
                capacity=int(r.get("capacity", 1)),
                pid_file=r.get("pid_file"),
            )
            for r in data.get("regions", [])
        ]

    def pid(self, region: RegionInfo) -> int:
        """The region's process: whoever listens on its port, else its Terraform pid file."""
        pid = listening_pid(region.port)
        if pid is None and region.pid_file:
            pid = read_pid(Path(region.pid_file))
        if pid is None:
            raise DeploymentError(f"region {region.id}: no process listens on port {region.port}")
        if pid == os.getpid():  # the port is one of our own fault proxies, never signal ourselves
            raise DeploymentError(f"region {region.id} is behind a drill proxy: signal its own process")
        return pid

    async def region_health(self, region: RegionInfo, timeout_s: float = 1.5) -> dict[str, Any] | None:
        try:
            async with httpx.AsyncClient(timeout=timeout_s) as client:
                resp = await client.get(
                    region.url.rstrip("/") + "/health", headers=self.region_auth.headers()
                )
            return dict(resp.json()) if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    async def edge_ready(self, timeout_s: float = 2.0) -> bool:
        try:
            async with httpx.AsyncClient(timeout=timeout_s) as client:
                for path in ("/health", "/healthz"):
                    resp = await client.get(self.edge.url.rstrip("/") + path)
                    if resp.status_code == 200:
                        return True
        except httpx.HTTPError:
            return False
        return False

    async def edge_status(self) -> dict[str, Any]:
        """The edge's authenticated ``/status`` (router state, recent failovers); empty if unreachable."""
        try:
            async with httpx.AsyncClient(timeout=5.0) as client:
                resp = await client.get(
                    self.edge.url.rstrip("/") + "/status",
                    headers={"Authorization": f"Bearer {self.edge.admin_key or self.edge.api_key}"},
                )
            return dict(resp.json()) if resp.status_code == 200 else {}
        except (httpx.HTTPError, ValueError):
            return {}

    async def ready(self) -> bool:
        try:
            regions = self.regions()
        except DeploymentError:
            return False
        healths = await asyncio.gather(*(self.region_health(r) for r in regions))
        return bool(regions) and all(h is not None for h in healths) and await self.edge_ready()

    async def ensure_up(self, report: Report, *, timeout_s: float = 600.0) -> None:
        if await self.ready():
            report(
                f"deployment is up: edge {self.edge.url}, regions {', '.join(r.id for r in self.regions())}"
            )
            return
        if self.start is not None:
            await self.start(report)
        else:
            command = [voicemesh_bin(), "up", "--detach"]
            report(f"starting the local deployment: {' '.join(command)}")
            await run_command(command, timeout_s, self.extra_env)
        deadline = time.monotonic() + 60
        urls = [r.url.rstrip("/") + "/health" for r in self.regions()] + [
            self.edge.url.rstrip("/") + "/health"
        ]
        try:
            for url in urls:
                await wait_healthy(url, timeout_s=max(1.0, deadline - time.monotonic()), interval_s=1.0)
        except ProcessStartError as exc:
            raise DeploymentError(
                f"the deployment was started but the edge at {self.edge.url} or a region is not healthy; "
                f"see `voicemesh infra status --env {self.env}`"
            ) from exc

    async def restore(self, report: Report, *, timeout_s: float = 300.0) -> None:
        """Bring every region back to its Terraform-declared state (restarts a killed process)."""
        if self.restorer is not None:
            report("restoring regions (terraform apply replaces dead processes)")
            await asyncio.wait_for(self.restorer(report), timeout_s)
            return
        command = [voicemesh_bin(), "infra", "up", "--env", self.env, "--registry", str(self.registry_path)]
        report(f"restoring regions: {' '.join(command)}")
        await run_command(command, timeout_s, self.extra_env)

    async def interpose(self, undo: Undo, *, settle_s: float = 3.0) -> dict[str, FaultProxy]:
        """A pass-through ``FaultProxy`` in front of every region, before any caller connects.

        The registry is rewritten to the proxies' URLs (the edge reloads it) and restored by ``undo``.
        """
        original = self.registry_path.read_bytes()
        proxies: dict[str, FaultProxy] = {}
        for record in json.loads(original).get("regions", []):
            proxy = FaultProxy(RegionInfo(id=record["id"], url=record["url"]).port)
            await proxy.start()
            proxies[str(record["id"])] = proxy

        async def put_back() -> None:
            atomic_write(self.registry_path, original)
            await asyncio.sleep(settle_s)  # let the edge reload before the proxies go away
            for proxy in proxies.values():
                await proxy.stop()

        undo.push("registry", put_back)
        await self.repoint(proxies, settle_s=settle_s)
        return proxies

    async def repoint(self, proxies: dict[str, FaultProxy], *, settle_s: float = 3.0) -> bool:
        """Point the registry at ``proxies`` again where it names a region's own URL (``voicemesh
        infra up`` rewrites it after a restore); True when it had to."""
        data = json.loads(self.registry_path.read_bytes())
        changed = False
        for record in data.get("regions", []):
            proxy = proxies.get(str(record["id"]))
            if proxy is not None and record["url"] != proxy.url:
                record["url"], changed = proxy.url, True
        if changed:
            atomic_write(self.registry_path, json.dumps(data, indent=2).encode())
            await asyncio.sleep(settle_s)
        return changed


async def run_command(
    command: Sequence[str], timeout_s: float, extra_env: dict[str, str] | None = None
) -> None:
    """Run a ``voicemesh`` command to completion; its output's tail goes into the error if it fails."""
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL,
        env={**os.environ, **(extra_env or {})},
    )
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        await stop_async(proc.pid, grace_s=5.0)  # with whatever it started
        await proc.wait()
        raise DeploymentError(f"`{' '.join(command)}` did not finish within {timeout_s:.0f}s") from None
    if proc.returncode != 0:
        tail = "\n".join(out.decode(errors="replace").strip().splitlines()[-15:])
        raise DeploymentError(f"`{' '.join(command)}` failed (exit {proc.returncode}):\n{tail}")
