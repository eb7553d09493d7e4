"""``voicemesh up`` / ``voicemesh down``: the whole local deployment, the way drills exercise it.

``up``: models (if missing) -> Terraform ``local`` env (one shared vLLM + two regions, or a given
LLM) -> the registry -> the edge, started with that registry. Foreground until Ctrl-C (then all
of it is torn down), or ``--detach`` to leave it running for ``voicemesh down``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import click
import httpx

from infra.processes import is_alive, read_pid
from voicemesh import paths
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from voicemesh.cli.infra import infra_down, infra_up, voicemesh_executable
from wire.errors import VoicemeshError

ENV = "local"


def _edge_pid_file() -> Path:
    return paths.state_dir() / "edge.pid"


def api_key() -> str:
    """The local deployment's API key: made once, kept (0600) in the state directory."""
    path = paths.state_dir() / "api-key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text("vm-" + secrets.token_urlsafe(24))
    return path.read_text().strip()


def _edge_available() -> bool:
    return importlib.util.find_spec("voicemesh.cli.edge") is not None


def _edge_command(registry: Path, host: str, port: int) -> list[str]:
    return [
        voicemesh_executable(),
        "edge",
        "serve",
        "--registry",
        str(registry),
        "--host",
        host,
        "--port",
        str(port),
    ]


async def _wait_edge(proc: subprocess.Popen[bytes], url: str, timeout_s: float = 120.0) -> None:
    t0 = time.monotonic()
    async with httpx.AsyncClient(timeout=2.0) as client:
        while time.monotonic() - t0 < timeout_s:
            if proc.poll() is not None:
                raise VoicemeshError(f"the edge exited with status {proc.returncode}; see its output above")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get(url + "/health")).status_code == 200:
                    progress(f"edge ready after {time.monotonic() - t0:.1f} s")
                    return
            await asyncio.sleep(0.3)
    raise VoicemeshError(f"the edge did not answer {url}/health within {timeout_s:.0f} s")


def _stop_edge(pid: int, grace_s: float = 10.0) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


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
    env = {**os.environ, "VOICEMESH_API_KEYS": key}
    command = _edge_command(registry, host, port)
    if detach:
        log = paths.state_dir() / "edge.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        _edge_pid_file().write_text(str(proc.pid))
    else:
        proc = subprocess.Popen(command, env=env, start_new_session=True)
    try:
        asyncio.run(_wait_edge(proc, url))
    except VoicemeshError as exc:
        _stop_edge(proc.pid)
        die_on_voicemesh_error(exc)
    console.print(f"[green]voicemesh is up[/green]: ws{url[4:]}/v1/realtime  (status: {url}/status)")
    console.print(f"API key: {key}")
    console.print(f"talk: {url}/#key={key}")
    console.print(f"ops:  {url}/ops#key={key}")
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
        _stop_edge(proc.pid)
        asyncio.run(infra_down(ENV))


@cli.command("down")
def down() -> None:
    """Stop what `voicemesh up --detach` left running: the edge, then the regions (terraform destroy)."""
    pid = read_pid(_edge_pid_file())
    if pid is not None and is_alive(pid, "edge"):
        progress(f"stopping the edge (pid {pid})")
        _stop_edge(pid)
    _edge_pid_file().unlink(missing_ok=True)
    try:
        asyncio.run(infra_down(ENV))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    if pid is not None and is_alive(pid):
        fail(f"the edge (pid {pid}) is still running: kill it by hand")
