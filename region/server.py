"""Run a region node in the foreground: the models and the web app, talking to vLLM over HTTP.

The region never starts vLLM: ``settings.llm.url`` names a running OpenAI-compatible server (the
command line starts one first when it is not given, see ``voicemesh/local_region.py``). Returns
when ``stop`` is set, or raises when a model fails to load (after cleaning up).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn

from region.app import create_app
from region.node import RegionNode
from region.settings import RegionSettings
from wire.access_log import access_log_on, uvicorn_log_options
from wire.errors import VoicemeshError
from wire.region_auth import TokenVerifier
from wire.region_keys import KeyFile, KeySetError
from wire.tracing import TracingSettingsError, setup_tracing

Report = Callable[[str], None]


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals belong to our caller, which may have more to stop (its vLLM) before the process ends.
        yield


class RegionStartError(VoicemeshError):
    code = "region_start_failed"


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


def _verifier(settings: RegionSettings, report: Report) -> TokenVerifier | None:
    """The token check, from the key file; SIGHUP re-reads it at once (it is also re-read on change)."""
    if settings.auth.keys_path is None:
        report(f"region {settings.region_id}: WARNING: no region key file, serving WITHOUT authentication")
        return None
    try:
        keys = KeyFile(settings.auth.keys_path)
    except KeySetError as exc:
        raise RegionStartError(f"region {settings.region_id}: {exc.message}") from exc
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread/loop
        asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, keys.reload)
    return TokenVerifier(keys)


async def serve_region(
    settings: RegionSettings,
    *,
    stop: asyncio.Event,
    report: Report,
    on_ready: Callable[[RegionNode], None] | None = None,
) -> None:
    llm_url = settings.llm.url
    if llm_url is None:
        raise RegionStartError(
            f"region {settings.region_id}: no LLM URL; give one (--llm-url) or run the region with "
            "`voicemesh region serve`, which starts vLLM first"
        )
    try:
        setup_tracing("voicemesh-region", **{"service.instance.id": settings.region_id})
    except TracingSettingsError as exc:
        raise RegionStartError(f"region {settings.region_id}: {exc}") from exc
    verifier = _verifier(settings, report)
    tls = settings.auth.tls_cert is not None
    if tls != (settings.auth.tls_key is not None):
        raise RegionStartError("TLS needs both a certificate and its key (--tls-cert, --tls-key)")
    listener = _listen(settings.host, settings.port)
    node = RegionNode.from_settings(settings, llm_url, report=report)
    config = uvicorn.Config(
        create_app(node, verifier=verifier), host=settings.host, port=settings.port, lifespan="on",
        **uvicorn_log_options(), ws_max_size=16 * 2**20, ws_ping_interval=20.0,
        ssl_certfile=settings.auth.tls_cert, ssl_keyfile=settings.auth.tls_key,
    )  # fmt: skip
    access_log_on()
    server = _Uvicorn(config)
    scheme = ("https", "wss") if tls else ("http", "ws")
    base = f"{scheme[0]}://{settings.host}:{settings.port}"
    report(
        f"region {settings.region_id}: serving {base} (turns {scheme[1]}://{settings.host}:{settings.port}"
        f"/v1/turns, {base}/health, {base}/metrics); warming models"
    )
    tasks: dict[str, asyncio.Task[object]] = {
        "web": asyncio.create_task(server.serve(sockets=[listener]), name="uvicorn"),
        "models": asyncio.create_task(node.warm_up(), name="warm-up"),
        "stop": asyncio.create_task(stop.wait(), name="stop"),
    }
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
                tasks["llm-watch"] = asyncio.create_task(node.watch_llm(), name="llm-watch")
                if on_ready is not None:
                    on_ready(node)
                continue
            break
    finally:
        server.should_exit = True
        for name, task in tasks.items():
            if name != "web":
                task.cancel()
        await asyncio.wait(tasks.values())
        listener.close()
    if problem is not None:
        raise problem
