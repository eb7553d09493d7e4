"""The benchmarked edge: ``voicemesh edge serve`` in a subprocess, and the raw-websocket sessions the
bench opens on it (raw rather than the SDK: a thousand SDK connections would spend this machine's CPU
on the client's own event models, inside the measurement)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from edge.shared.settings import EdgeSettings
from voicemesh.processes import free_port, spawn, wait_healthy
from voicemesh.processes import stop as stop_process

Report = Callable[[str], None]


class EdgeProcess:
    """``voicemesh edge serve`` in a subprocess (optionally pinned to one core); by default in front
    of no reachable region, or of ``region`` (``ID=URL``, as ``--region`` takes it)."""

    def __init__(
        self, settings: EdgeSettings, *, core: int | None = None, region: str = "nowhere=http://127.0.0.1:9",
        checkout: Path | None = None, env: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        """``checkout``: run that source tree's edge (a comparison), with this environment's packages;
        ``env``: settings of the edge's own (``VOICEMESH_*``)."""
        self.port = free_port()
        self.key = settings.api_keys[0]
        cmd = [
            sys.executable, "-m", "voicemesh.cli.main", "edge", "serve", "--region", region,
            "--port", str(self.port), "--vad-model", settings.vad_model,
            "--vad-runtime", settings.vad_runtime,
            "--max-sessions-per-key", "100000", "--connect-burst", "100000",
        ]  # fmt: skip
        if core is not None and shutil.which("taskset"):
            cmd = ["taskset", "-c", str(core), *cmd]
        # The bench reads /status: its one key is the edge's admin key too.
        env = {**os.environ, **(env or {}), "VOICEMESH_API_KEY": self.key, "VOICEMESH_ADMIN_KEY": self.key}
        if checkout is not None:
            # ``python -m`` puts its working directory first on ``sys.path``, ahead of PYTHONPATH:
            # started from inside another checkout it would run that one's code.
            env["PYTHONPATH"] = str(checkout)
        self.log = Path(tempfile.gettempdir()) / f"voicemesh-bench-edge-{self.port}.log"
        self.proc = spawn(cmd, log_path=self.log, env=env, cwd=checkout, die_with_parent=True)
        self.url = f"ws://127.0.0.1:{self.port}/v1/realtime?model=bench"

    async def ready(self) -> None:
        await wait_healthy(
            f"http://127.0.0.1:{self.port}/health", timeout_s=30, process=self.proc, log_path=self.log,
            what="the benchmarked edge",
        )  # fmt: skip
        await asyncio.sleep(2.5)  # let Piper finish loading before measuring memory

    async def vad_stats(self) -> dict[str, Any]:
        async with httpx.AsyncClient() as http:
            r = await http.get(
                f"http://127.0.0.1:{self.port}/status", headers={"Authorization": f"Bearer {self.key}"}
            )
            stats: dict[str, Any] = r.json()["edge"]["vad"]
            return stats

    async def open(self) -> ClientConnection:
        # No keepalive pings: a saturated edge answers them late, and the bench would drop the
        # very sessions whose backlog it is measuring.
        ws = await connect(
            self.url, additional_headers={"Authorization": f"Bearer {self.key}"}, max_size=None,
            ping_interval=None,
        )  # fmt: skip
        await ws.recv()  # session.created
        return ws

    def stop(self) -> None:
        stop_process(self.proc)


async def roundtrip(ws: ClientConnection, event: dict[str, Any], until: str) -> float:
    t0 = time.perf_counter()
    await ws.send(json.dumps(event))
    while json.loads(await ws.recv())["type"] != until:
        pass
    return time.perf_counter() - t0
