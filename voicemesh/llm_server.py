"""Start and supervise a vLLM OpenAI-compatible server process (a region's own, or a shared one).

vLLM runs from its own virtual environment (its pins are heavy and torch-bound), so regions talk
to it only over HTTP, never by import. Starting, waiting for ``/health`` and stopping go through
``voicemesh.processes``; this module adds the command line, the install check and progress lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

from region.settings import LlmSettings
from voicemesh import paths
from voicemesh.processes import ProcessStartError, spawn, stop_async, wait_healthy
from wire.errors import ModelMissing
from wire.tasks import cancel_and_wait
from wire.tracing import exporter_name, traces_endpoint

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
_HINT = "Check memory (it needs ~5 GB) and `voicemesh models verify`."


def renice_tree(pid: int, nice: int) -> int:
    """Set the niceness of every thread of ``pid`` and of its descendants (Linux counts niceness
    per thread, so renicing the process alone leaves its running threads as they were); how many
    threads were set. Lowering it needs CAP_SYS_NICE (``PermissionError`` otherwise). For toggling
    the priority of a running vLLM (``voicemesh bench region --lever priority``)."""
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    done = 0
    for proc in procs:
        for tid in (t.id for t in proc.threads()):
            with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                os.setpriority(os.PRIO_PROCESS, tid, nice)
                done += 1
    return done


class LlmStartError(ProcessStartError):
    """vLLM exited while starting, did not become ready in time, or exited while serving."""

    code = "llm_start_failed"


def vllm_argv(settings: LlmSettings, *, python: str, host: str, port: str, model: str = "") -> list[str]:
    """vLLM's OpenAI server with a profile's model and flags (the tool-call parser included): what
    ``voicemesh llm serve`` runs here and the cloud's vLLM container runs (``voicemesh/workloads.py``)."""
    return [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model or settings.model, "--served-model-name", settings.served_name,
        "--host", host, "--port", port,
        *settings.vllm_args,
    ]  # fmt: skip


def vllm_tracing(env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """vLLM's tracing arguments and variables for a process environment with the standard ``OTEL_*``
    variables: none when that environment exports no OTLP, else its traces URL as vLLM's flag, OTLP over
    HTTP (vLLM reads only ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` and defaults it to gRPC) and ``vllm`` as
    the service unless the environment names one. The one rule for ``voicemesh llm serve`` here and the
    cloud's vLLM container (``voicemesh/workloads.py``)."""
    if exporter_name(env) != "otlp":
        return [], {}
    variables = {
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": env.get("OTEL_SERVICE_NAME") or "vllm",
    }
    return ["--otlp-traces-endpoint", traces_endpoint(env)], variables


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
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.extra_env = dict(env or {})
        """Added to this process's environment for vLLM (e.g. ``OTEL_*``: the tests' own receiver)."""
        self.host = host
        self.port = port
        self.log_path = log_path or paths.state_dir() / "logs" / f"vllm-{port}.log"
        self._report = report or (lambda line: log.info("%s", line))
        self._proc: subprocess.Popen[bytes] | None = None
        self._pump: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        s = self.settings
        # Niceness set at exec is inherited by every thread and process vLLM makes (its engine core,
        # its OpenMP workers); a renice after start would race the threads it creates.
        niced = ["nice", "-n", str(s.nice)] if s.nice else []
        traced, _ = vllm_tracing(self._base_env())
        return [*niced, *vllm_argv(s, python=s.runtime_python, host=self.host, port=str(self.port)), *traced]

    def env(self) -> dict[str, str]:
        """vLLM's environment: ours, the profile's, and (tracing on) ``vllm_tracing``'s variables."""
        env = self._base_env()
        return {**env, **vllm_tracing(env)[1]}

    def _base_env(self) -> dict[str, str]:
        return {**os.environ, **self.settings.vllm_env, **self.extra_env}

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
        """Start vLLM and return its URL once ``/health`` answers; LlmStartError (after cleaning
        up) when it exits or is not ready within ``ready_timeout_s``."""
        s = self.settings
        self._check_installed()
        t0 = time.monotonic()
        self._report(f"vLLM: starting {s.served_name} on {self.host}:{self.port} (CPU start takes ~40-60 s)")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        # die_with_parent: a SIGKILLed `llm serve` / `region serve` takes its vLLM along (issue 14).
        self._proc = spawn(self.command(), log_path=self.log_path, env=self.env(), die_with_parent=True)
        self._pump = asyncio.create_task(self._follow_log(offset, t0), name="vllm log")
        try:
            took = await wait_healthy(
                f"http://{self.host}:{self.port}/health",
                timeout_s=s.ready_timeout_s,
                process=self._proc,
                log_path=self.log_path,
                what="vLLM",
                hint=_HINT,
                interval_s=0.5,
            )
        except ProcessStartError as exc:
            await self.stop()
            raise LlmStartError(exc.message) from None
        except BaseException:
            await self.stop()
            raise
        self._report(f"vLLM: ready at {self.url} after {took:.0f} s")
        return self.url

    async def _follow_log(self, offset: int, t0: float) -> None:
        """Report the milestone lines vLLM writes to its log while it starts."""
        with self.log_path.open("rb") as f:
            f.seek(offset)
            partial = b""
            while True:
                chunk = f.read()
                if not chunk:
                    await asyncio.sleep(0.5)
                    continue
                *lines, partial = (partial + chunk).split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace").rstrip()
                    if any(m in line for m in _MILESTONES):
                        msg = line.split("] ", 1)[-1]
                        self._report(f"vLLM: +{time.monotonic() - t0:.0f}s {msg[:140]}")

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    async def wait(self) -> int:
        """Wait until vLLM exits on its own; its exit code."""
        assert self._proc is not None
        return await asyncio.to_thread(self._proc.wait)  # stop() ends it, which ends this thread too

    async def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM vLLM's process group, SIGKILL what is left after ``grace_s``."""
        await cancel_and_wait(self._pump)
        self._pump = None
        if self._proc is not None:
            await stop_async(self._proc, grace_s=grace_s)
            self._proc = None
