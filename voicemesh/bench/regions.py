"""Regions the router bench may crash, hang and bring back: ``voicemesh region serve`` children.

Each runs as its own process on a port of its own (so a SIGKILL or SIGSTOP hits that region
only), logs to a file, and is started, waited for and stopped with ``voicemesh.processes``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from voicemesh.processes import free_port, spawn, stop_async, wait_healthy
from wire.region_auth import KEYS_ENV


class LocalRegion:
    """A ``voicemesh region serve`` child process the bench may kill and bring back on its port."""

    def __init__(self, region_id: str, llm_url: str, log_dir: Path) -> None:
        self.id = region_id
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._llm_url = llm_url
        self._log = log_dir / f"{region_id}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    async def start(self) -> None:
        cmd = [
            sys.executable, "-m", "voicemesh.cli.main", "region", "serve", "--id", self.id,
            "--port", str(self.port), "--llm-url", self._llm_url,
        ]  # fmt: skip
        # The key set the bench's own router signs with; without one these loopback regions run open.
        keys = os.environ.get(KEYS_ENV)
        cmd += ["--keys", keys] if keys else ["--insecure-no-auth"]
        self._proc = spawn(cmd, log_path=self._log, die_with_parent=True)  # a killed bench takes it along
        await wait_healthy(
            f"{self.url}/health",
            timeout_s=120,
            process=self._proc,
            log_path=self._log,
            what=f"region {self.id}",
        )

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    async def stop(self) -> None:
        if self._proc is not None:
            await stop_async(self._proc, grace_s=15.0)  # SIGCONT first: the bench may have stopped it
