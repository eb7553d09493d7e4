"""Start and supervise a vLLM OpenAI-compatible server process (the region's own, or a shared one).

vLLM runs from its own virtual environment (its pins are heavy and torch-bound), so the region
talks to it only over HTTP, never by import.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from region.settings import LlmSettings
from wire.errors import ModelMissing, VoicemeshError

log = logging.getLogger(__name__)

Report = Callable[[str], None]

# vLLM log lines worth showing while it starts (the rest is noise at this point).
_MILESTONES = (
    "Resolved architecture",
    "Loading weights took",
    "Model loading took",
    "KV cache",
    "Starting vLLM API server",
    "Application startup complete",
)


class LlmStartError(VoicemeshError):
    code = "llm_start_failed"


class VllmServer:
    """One vLLM process: ``start()`` returns once it serves, ``stop()`` ends it and its children."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        host: str = "127.0.0.1",
        port: int = 8100,
        log_path: Path | None = None,
        report: Report | None = None,
    ) -> None:
        self.settings = settings
        self.host = host
        self.port = port
        self.log_path = log_path
        self._report = report or (lambda line: log.info("%s", line))
        self._proc: asyncio.subprocess.Process | None = None
        self._pump: asyncio.Task[None] | None = None
        self._tail: list[str] = []

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        s = self.settings
        return [
            s.runtime_python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            s.model,
            "--served-model-name",
            s.served_name,
            "--host",
            self.host,
            "--port",
            str(self.port),
            *s.vllm_args,
        ]

    def _check_installed(self) -> None:
        s = self.settings
        if not s.runtime_python or not Path(s.runtime_python).exists():
            raise ModelMissing(
                f"the vLLM runtime is not installed ({s.runtime_python or 'no interpreter set'}): "
                "run `voicemesh models fetch`"
            )
        if s.model.startswith("/") and not Path(s.model).exists():
            raise ModelMissing(f"LLM weights not found at {s.model}: run `voicemesh models fetch`")

    async def start(self) -> str:
        s = self.settings
        self._check_installed()
        t0 = time.monotonic()
        self._report(f"vLLM: starting {s.served_name} on {self.host}:{self.port} (CPU start takes ~40-60 s)")
        self._proc = await asyncio.create_subprocess_exec(
            *self.command(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, **s.vllm_env},
            start_new_session=True,  # so stop() can end vLLM's worker processes with it
        )
        self._pump = asyncio.create_task(self._read_log(t0))
        deadline = t0 + s.ready_timeout_s
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self._proc.returncode is not None:
                    raise LlmStartError(
                        f"vLLM exited with code {self._proc.returncode} while starting; last lines:\n"
                        + "\n".join(self._tail[-15:])
                        + "\nCheck memory (it needs ~5 GB) and `voicemesh models verify`."
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"http://{self.host}:{self.port}/health")).status_code == 200:
                        self._report(f"vLLM: ready at {self.url} after {time.monotonic() - t0:.0f} s")
                        return self.url
                await asyncio.sleep(0.5)
        await self.stop()
        raise LlmStartError(f"vLLM did not become ready within {s.ready_timeout_s:.0f} s; see its log")

    async def _read_log(self, t0: float) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        sink = self.log_path.open("a") if self.log_path else None
        try:
            async for raw in self._proc.stdout:
                line = raw.decode(errors="replace").rstrip()
                self._tail = [*self._tail[-50:], line]
                if sink:
                    sink.write(line + "\n")
                    sink.flush()
                if any(m in line for m in _MILESTONES):
                    msg = line.split("] ", 1)[-1]
                    self._report(f"vLLM: +{time.monotonic() - t0:.0f}s {msg[:140]}")
        finally:
            if sink:
                sink.close()

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def wait(self) -> int:
        assert self._proc is not None
        return await self._proc.wait()

    async def stop(self, grace_s: float = 10.0) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), grace_s)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        if self._pump:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        self._proc = None
