"""Run a region node in the foreground: its own vLLM (unless given a URL), the models, the web app.

Used by ``voicemesh region serve`` and ``voicemesh up``. Returns when ``stop`` is set, when vLLM
dies, or when a model fails to load (then it raises, after cleaning up).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import uvicorn

from region.app import create_app
from region.llm_server import LlmStartError, VllmServer
from region.node import RegionNode
from region.settings import RegionSettings
from wire.errors import VoicemeshError

Report = Callable[[str], None]


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals belong to our caller, which must stop vLLM too before the process ends.
        yield


class RegionStartError(VoicemeshError):
    code = "region_start_failed"


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _listen(host: str, port: int) -> socket.socket:
    """Bind before anything starts, so a taken port is a clear error rather than uvicorn's exit."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise RegionStartError(
            f"cannot listen on {host}:{port} ({exc.strerror}): choose another --port"
        ) from exc
    return sock


async def serve_region(
    settings: RegionSettings,
    *,
    stop: asyncio.Event,
    report: Report,
    llm_port: int = 0,
    llm_log: Path | None = None,
    on_ready: Callable[[RegionNode], None] | None = None,
) -> None:
    listener = _listen(settings.host, settings.port)
    vllm: VllmServer | None = None
    llm_url = settings.llm.url
    if llm_url is None:
        vllm = VllmServer(
            settings.llm, port=llm_port or _free_port("127.0.0.1"), log_path=llm_log, report=report
        )
        llm_url = vllm.url
    settings = replace(settings, llm=replace(settings.llm, url=llm_url))
    node = RegionNode(settings, llm_url, report=report)
    config = uvicorn.Config(
        create_app(node), host=settings.host, port=settings.port, log_level="warning", lifespan="on",
        ws_max_size=16 * 2**20, ws_ping_interval=20.0,
    )  # fmt: skip
    server = _Uvicorn(config)
    base = f"http://{settings.host}:{settings.port}"
    report(
        f"region {settings.region_id}: serving {base} (turns ws://{settings.host}:{settings.port}/v1/turns, "
        f"{base}/health, {base}/metrics); warming models"
    )
    tasks: dict[str, asyncio.Task[object]] = {
        "web": asyncio.create_task(server.serve(sockets=[listener]), name="uvicorn"),
        "models": asyncio.create_task(node.warm_up(), name="warm-up"),
        "stop": asyncio.create_task(stop.wait(), name="stop"),
    }
    if vllm is not None:
        tasks["llm"] = asyncio.create_task(_run_vllm(vllm), name="vllm")
    problem: BaseException | None = None
    try:
        while True:
            done, _ = await asyncio.wait(tasks.values(), return_when=asyncio.FIRST_COMPLETED)
            finished = {name for name, t in tasks.items() if t in done}
            if "models" in finished:
                task = tasks.pop("models")
                if task.exception() is not None:
                    problem = task.exception()
                    break
                report(f"region {settings.region_id}: ready at {base} (all models warm)")
                if on_ready is not None:
                    on_ready(node)
                continue
            if "llm" in finished:
                problem = tasks["llm"].exception() or LlmStartError("the region's vLLM process exited")
            break
    finally:
        server.should_exit = True
        for name, task in tasks.items():
            if name != "web":
                task.cancel()
        await asyncio.wait(tasks.values())
        if vllm is not None:
            await vllm.stop()
        listener.close()
    if problem is not None:
        raise problem


async def _run_vllm(vllm: VllmServer) -> None:
    await vllm.start()
    code = await vllm.wait()
    raise LlmStartError(f"the region's vLLM exited with code {code}; see its log")
