"""``voicemesh up`` / ``voicemesh down``: the whole local deployment, the way drills exercise it.

``up``: models (if missing) -> Terraform ``local`` env (one shared vLLM + two regions, or a given
LLM) -> the registry -> the edge, started with that registry. Foreground until Ctrl-C (then all
of it is torn down), or ``--detach`` to leave it running for ``voicemesh down``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import secrets
import signal
from pathlib import Path

import click

from voicemesh import paths
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from voicemesh.cli.infra import infra_down, infra_up, region_keys_path, voicemesh_executable
from voicemesh.processes import is_alive, read_pid, spawn, stop, wait_healthy_sync
from wire.errors import VoicemeshError

ENV = "local"


def _edge_pid_file() -> Path:
    return paths.state_dir() / "edge.pid"


def api_key(name: str = "api-key", prefix: str = "vm-") -> str:
    """One of the local deployment's keys: made once, kept (0600) in the state directory."""
    path = paths.state_dir() / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(prefix + secrets.token_urlsafe(24))
    return path.read_text().strip()


def admin_key() -> str:
    """The local deployment's admin key (``/status``, the ops page); the API key is for talking."""
    return api_key("admin-key", "vma-")


def _edge_available() -> bool:
    return importlib.util.find_spec("voicemesh.cli.edge") is not None


def _edge_command(registry: Path, host: str, port: int) -> list[str]:
    return [
        voicemesh_executable(),
        "edge",
        "serve",
        "--registry",
        str(registry),
        "--region-keys",  # made by `infra_up` before apply, the same file the regions read
        str(region_keys_path()),
        "--host",
        host,
        "--port",
        str(port),
    ]


@cli.command("up")
@click.option("--regions", type=click.IntRange(1, 3), default=2, show_default=True)
@click.option("--llm-url", default=None, help="Share this OpenAI-compatible LLM instead of starting vLLM.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Edge address.")
@click.option("--port", default=8080, show_default=True, type=int, help="Edge port.")
@click.option("--base-port", default=9001, show_default=True, type=int, help="Port of the first region.")
@click.option("--detach", is_flag=True, help="Leave everything running; stop it with `voicemesh down`.")
@click.option("--skip-models", is_flag=True, help="Do not check the models first.")
def up(
    regions: int, llm_url: str | None, host: str, port: int, base_port: int, detach: bool, skip_models: bool
) -> None:
    """Run the local deployment: regions provisioned by Terraform, then the edge in front of them."""
    from voicemesh.models import ensure_models

    try:
        if not skip_models:
            progress("[1/3] models")
            ensure_models(report=progress, runtime=llm_url is None)
        progress("[2/3] regions (terraform, env local)" + ("" if llm_url else " with a shared vLLM"))
        variables: dict[str, object] = {
            "region_count": regions,
            "base_port": base_port,
            "llm_url": llm_url or "",
        }
        _, registry = asyncio.run(infra_up(ENV, variables))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    key = api_key()
    if not _edge_available():
        # The edge command is not part of this build yet: the regions are the deployment.
        console.print(
            f"[yellow]no `voicemesh edge` in this build: regions are up, registry {registry}[/yellow]"
        )
        return
    progress("[3/3] edge")
    url = f"http://{host}:{port}"
    admin = admin_key()
    env = {**os.environ, "VOICEMESH_API_KEYS": key, "VOICEMESH_ADMIN_KEYS": admin}
    command = _edge_command(registry, host, port)
    log = paths.state_dir() / "edge.log" if detach else None  # in the foreground it prints here
    proc = spawn(command, log_path=log, env=env)
    if detach:
        _edge_pid_file().write_text(str(proc.pid))
    try:
        took = wait_healthy_sync(
            url + "/health", timeout_s=120.0, process=proc, log_path=log, what="the edge"
        )
    except VoicemeshError as exc:
        stop(proc)
        die_on_voicemesh_error(exc)
    progress(f"edge ready after {took:.1f} s")
    console.print(f"[green]voicemesh is up[/green]: ws{url[4:]}/v1/realtime  (status: {url}/status)")
    console.print(f"API key: {key}   admin key (status, ops): {admin}")
    console.print(f"talk: {url}/#key={key}")
    console.print(f"ops:  {url}/ops#key={admin}")
    if detach:
        console.print("running in the background: `voicemesh down` stops it")
        return
    console.print("Ctrl-C stops the edge and tears the regions down")
    # Ctrl-C and `kill` both tear down (SIGINT too: a shell's background job starts with it ignored).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.default_int_handler)
    try:
        proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        stop(proc)
        asyncio.run(infra_down(ENV))


@cli.command("down")
def down() -> None:
    """Stop what `voicemesh up --detach` left running: the edge, then the regions (terraform destroy)."""
    pid = read_pid(_edge_pid_file())
    if pid is not None and is_alive(pid, "edge"):
        progress(f"stopping the edge (pid {pid})")
        stop(pid)
    _edge_pid_file().unlink(missing_ok=True)
    try:
        asyncio.run(infra_down(ENV))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    if pid is not None and is_alive(pid):
        fail(f"the edge (pid {pid}) is still running: kill it by hand")
