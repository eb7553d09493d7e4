"""The edge drills' target: several edges sharing one real redis-server, behind a load balancer.

``EdgeFleet`` starts a throwaway ``redis-server`` (a free loopback port, its own temp dir, no
persistence), ``count`` ``voicemesh edge serve`` processes reading the deployment's region registry
with that Redis as their session store, and the front door in front of them (HAProxy, configured
as ``voicemesh up`` configures it: ``voicemesh.drills.frontdoor``): callers connect to it, so a caller
dropped by one edge reconnects (and resumes) on another, as behind the deployment's own front door.
Everything it starts it stops (``aclose``), whatever happened; every wait is bounded.
The drill faults act on it: SIGKILL an edge, SIGTERM it (drain) and start it again, stop Redis and
start it again on the same port.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from voicemesh.drills.caller_state import EdgeTarget
from voicemesh.drills.frontdoor import FrontDoor
from voicemesh.processes import free_port, kill_tree, spawn, stop_async, wait_for, wait_healthy
from wire.errors import VoicemeshError

Report = Any  # Callable[[str], None]; kept loose to avoid importing the deployment (it imports us)


class FleetError(VoicemeshError):
    code = "edge_fleet_error"


async def serving_index(urls: Sequence[str], session_id: str, admin_key: str) -> int | None:
    """Which of the edges at ``urls`` lists ``session_id`` in its ``/status`` (serves it now), if any."""
    async with httpx.AsyncClient(timeout=3.0) as client:
        for index, url in enumerate(urls):
            try:
                resp = await client.get(f"{url}/status", headers={"Authorization": f"Bearer {admin_key}"})
                sessions = (resp.json().get("edge") or {}).get("sessions") or []
            except (httpx.HTTPError, ValueError):
                continue
            if session_id in sessions:
                return index
    return None


@dataclass
class FleetEdge:
    name: str
    port: int
    log: Path
    process: Any = None
    """The running ``Popen`` (``None`` while stopped)."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.process is None:
            raise FleetError(f"{self.name} is not running")
        return int(self.process.pid)


@dataclass
class EdgeFleet:
    voicemesh_bin: str
    registry_path: Path
    region_keys_path: Path
    api_key: str
    admin_key: str
    count: int = 2
    drain_s: float = 20.0
    start_timeout_s: float = 120.0
    edges: list[FleetEdge] = field(default_factory=list)
    redis_port: int = 0
    _dir: Path | None = None
    _redis: Any = None
    balancer: FrontDoor | None = None

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    @property
    def target(self) -> EdgeTarget:
        if self.balancer is None:
            raise FleetError("the edge fleet is not started")
        return EdgeTarget(f"http://127.0.0.1:{self.balancer.port}", self.api_key, self.admin_key)

    async def start(self, report: Report) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="voicemesh-edges-"))
        try:
            self.redis_port = free_port()
            await self.start_redis()
            self.edges = [
                FleetEdge(f"edge-{i}", free_port(), self._dir / f"edge-{i}.log") for i in range(self.count)
            ]
            await asyncio.gather(*(self.start_edge(e) for e in self.edges))
            self.balancer = FrontDoor([(e.name, e.port) for e in self.edges], self._dir)
            await self.balancer.start()
        except BaseException:
            await self.aclose()
            raise
        report(
            f"edge fleet: {self.count} edges on ports {', '.join(str(e.port) for e in self.edges)}, "
            f"redis on {self.redis_port}, front door (HAProxy) on {self.balancer.port}"
        )

    async def start_redis(self) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            raise FleetError("redis-server is not installed (apt-get install redis-server)")
        assert self._dir is not None
        log = self._dir / "redis.log"
        self._redis = spawn(
            [exe, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "no", "--dir", str(self._dir)],
            log_path=log,
        )  # fmt: skip

        async def ping() -> None:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.redis_port)
            try:
                writer.write(b"PING\r\n")
                await writer.drain()
                if not (await asyncio.wait_for(reader.readline(), 2.0)).startswith(b"+PONG"):
                    raise ConnectionError("redis did not answer PONG")
            finally:
                writer.close()

        await wait_for(ping, timeout_s=30, process=self._redis, log_path=log, what="redis-server")

    async def stop_redis(self) -> None:
        """Redis goes away at once (SIGKILL: no goodbye to the edges' connections)."""
        if self._redis is not None:
            kill_tree(self._redis.pid)
            await asyncio.to_thread(self._redis.wait, 10)
            self._redis = None

    async def start_edge(self, edge: FleetEdge) -> None:
        cmd = [
            self.voicemesh_bin, "edge", "serve", "--port", str(edge.port),
            "--registry", str(self.registry_path), "--region-keys", str(self.region_keys_path),
            "--store-url", self.redis_url,
        ]  # fmt: skip
        env = {
            **os.environ,
            "VOICEMESH_API_KEY": self.api_key,
            "VOICEMESH_ADMIN_KEY": self.admin_key,
            "VOICEMESH_DRAIN_S": f"{self.drain_s:g}",
        }
        edge.process = spawn(cmd, log_path=edge.log, env=env)
        await wait_healthy(
            f"{edge.url}/health", timeout_s=self.start_timeout_s, process=edge.process, log_path=edge.log,
            what=edge.name, interval_s=0.5,
        )  # fmt: skip

    def kill(self, edge: FleetEdge) -> list[int]:
        """SIGKILL: the edge dies mid-whatever, no drain."""
        killed = kill_tree(edge.pid)
        edge.process = None
        return killed

    async def drain(self, edge: FleetEdge) -> float:
        """SIGTERM and wait for the edge to drain and exit by itself; its exit code. Bounded by
        ``drain_s`` plus a margin, then it is stopped hard."""
        process = edge.process
        os.kill(edge.pid, signal.SIGTERM)
        try:
            code = await asyncio.wait_for(asyncio.to_thread(process.wait), self.drain_s + 15.0)
        except TimeoutError:
            await stop_async(process, grace_s=2.0)
            raise FleetError(f"{edge.name} did not exit within {self.drain_s + 15:g} s of SIGTERM") from None
        finally:
            edge.process = None
        return float(code)

    async def serving(self, session_id: str) -> FleetEdge | None:
        """The edge that serves ``session_id`` now (its ``/status``), if any."""
        running = [edge for edge in self.edges if edge.process is not None]
        found = await serving_index([edge.url for edge in running], session_id, self.admin_key)
        return None if found is None else running[found]

    async def restore(self) -> None:
        """Every edge and Redis running again (the undo of every edge drill fault)."""
        if self._redis is None:
            await self.start_redis()
        for edge in self.edges:
            if edge.process is None or edge.process.poll() is not None:
                edge.process = None
                await self.start_edge(edge)

    async def aclose(self, keep_logs_for: Callable[[str], None] | None = None) -> None:
        """Stop everything; the folder with the edges', Redis's and the balancer's logs goes too,
        unless ``keep_logs_for`` (a drill that did not pass): then it is kept and its path reported."""
        if self.balancer is not None:
            await self.balancer.stop()
        for edge in self.edges:
            if edge.process is not None:
                await stop_async(edge.process, grace_s=self.drain_s + 5.0)
                edge.process = None
        if self._redis is not None:
            await stop_async(self._redis, grace_s=5.0)
            self._redis = None
        if self._dir is not None and keep_logs_for is not None:
            keep_logs_for(f"the edge fleet's logs are kept in {self._dir}: they say what the edges did")
        elif self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None


__all__ = ["EdgeFleet", "FleetEdge", "FleetError"]
