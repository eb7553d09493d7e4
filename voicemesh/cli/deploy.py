"""``voicemesh up`` / ``down`` / ``supervise``: the whole local deployment, the way drills exercise it.

``up``: models (if missing) -> Terraform ``local`` env (one shared vLLM or a given LLM, the
regions, one redis-server, ``--edges`` edges on the ports after ``--port``, each at its own
pseudo-location, the front door: HAProxy on ``--port``, the one URL clients use, and Prometheus
scraping them all on a free port: docs/observability.md).
Foreground: it then supervises (a process that dies is re-provisioned through Terraform) until
Ctrl-C, SIGTERM or SIGHUP, and tears everything down. ``--detach`` leaves
``voicemesh supervise`` doing that in the background until ``voicemesh down``.

Whatever happens (a signal at any step, an error, a SIGKILL), what ``up`` starts is recorded first
in the ledger and tagged (docs/lifecycle.md), so its own teardown, ``down`` or the next ``up``
stops all of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sys
from pathlib import Path
from typing import NoReturn

import click
from rich.markup import escape

from voicemesh import paths
from voicemesh.cli.common import cli, console, fail, progress, run_until_signal
from voicemesh.cli.environments import (
    environment,
    infra_down,
    infra_up,
    prometheus_executable,
    voicemesh_executable,
)
from voicemesh.cli.interrupts import Interrupted, interruptible
from voicemesh.processes import TAG_ENV, Entry, Ledger, free_port, members, spawn
from wire.errors import VoicemeshError

ENV = "local"
_TERRAFORM_ENTRY = f"terraform:{ENV}"
_SUPERVISOR_ENTRY = "supervisor"


def _key_file(name: str, prefix: str) -> Path:
    path = paths.state_dir() / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(prefix + secrets.token_urlsafe(24))
    return path


def api_key(name: str = "api-key", prefix: str = "vm-") -> str:
    """One of the local deployment's keys: made once, kept (0600) in the state directory."""
    return _key_file(name, prefix).read_text().strip()


def admin_key() -> str:
    """The local deployment's admin key (``/status``, the ops page); the API key is for talking."""
    return api_key("admin-key", "vma-")


def _say(line: str) -> None:
    """Progress that survives a closed terminal (SIGHUP): the teardown must go on regardless."""
    with contextlib.suppress(OSError):
        progress(line)


def _planned_ports(variables: dict[str, object]) -> list[int]:
    """Every port the environment will listen on with these variables (recorded before apply)."""

    def num(name: str, default: int) -> int:
        value = variables.get(name)
        return int(value) if isinstance(value, int | str) else default

    regions, edges = num("region_count", 2), num("edge_count", 0)
    ports = [num("base_port", 9001) + i for i in range(regions)]
    ports += [num("edge_port", 8081) + i for i in range(edges)]
    if edges:
        ports.append(num("redis_port", 6390))
        if num("frontdoor_port", 8080):
            ports += [num("frontdoor_port", 8080), num("frontdoor_stats_port", 8085)]
    if num("prometheus_port", 0):
        ports.append(num("prometheus_port", 0))
    if not variables.get("llm_url"):
        ports += [num("llm_port", 8100) + i for i in range(regions if variables.get("llm_per_region") else 1)]
    return ports


async def _destroy() -> None:
    await infra_down(ENV, report=_say)


def _teardown(ledger: Ledger) -> list[str]:
    from voicemesh.teardown import teardown

    return asyncio.run(teardown(ledger, _destroy, _say))


def _teardown_or_fail(ledger: Ledger, why: str, code: int = 1) -> NoReturn:
    _say(f"{why}: stopping everything this `up` started")
    problems = _teardown(ledger)
    if problems:
        fail(f"{why}; and not everything stopped: {'; '.join(problems)}. Run `voicemesh down`.", code=code)
    _say("stopped: no process and no listening port left")
    with contextlib.suppress(OSError):
        console.print(f"[yellow]{escape(why)}[/yellow]")
    sys.exit(code)


def _take_over(ledger: Ledger) -> None:
    """Refuse when another deployment runs here; clean up what a killed ``up`` left."""
    from infra.processes import is_alive

    if ledger.owner is not None and ledger.owner != os.getpid() and is_alive(ledger.owner, "voicemesh"):
        fail(
            f"a deployment is already running from {paths.state_dir()} (pid {ledger.owner}); "
            "`voicemesh down` stops it"
        )
    leftovers = members(ledger)
    if ledger.detached and leftovers:
        fail(
            f"a deployment is already running from {paths.state_dir()} (detached); `voicemesh down` stops it"
        )
    if leftovers or not ledger.is_empty():
        _say(
            f"an earlier `up` did not finish (left pid {', '.join(map(str, leftovers)) or '-'}): cleaning up"
        )
        problems = _teardown(ledger)
        if problems:
            fail(f"could not clean up what an earlier `up` left: {'; '.join(problems)}")


def _start_supervisor(ledger: Ledger) -> int:
    ledger.record(Entry(name=_SUPERVISOR_ENTRY, match="supervise"))  # before: it is tagged meanwhile
    log = paths.state_dir() / "supervise.log"
    proc = spawn([voicemesh_executable(), "supervise", "--env", ENV], log_path=log, env=dict(os.environ))
    ledger.record(Entry(name=_SUPERVISOR_ENTRY, pid=proc.pid, match="supervise"))
    ledger.owner = proc.pid
    ledger.save()
    return proc.pid


async def _supervise_forever() -> None:
    from voicemesh.supervisor import Supervisor

    await Supervisor(environment(ENV, _say), report=_say).run(asyncio.Event())


@cli.command("up")
@click.option("--regions", type=click.IntRange(1, 3), default=2, show_default=True)
@click.option("--edges", type=click.IntRange(1, 4), default=2, show_default=True,
              help="Edges behind the front door (ports after --port), each at its own location.")  # fmt: skip
@click.option("--llm-url", default=None, help="Share this OpenAI-compatible LLM instead of starting vLLM.")
@click.option("--port", default=8080, show_default=True, type=int,
              help="Where clients connect: the front door (HAProxy); the edges take the next ports, its "
              "/health and /stats the one after them.")  # fmt: skip
@click.option("--base-port", default=9001, show_default=True, type=int, help="Port of the first region.")
@click.option("--redis-port", default=6390, show_default=True, type=int, help="Port of the edges' Redis.")
@click.option("--llm-port", default=8100, show_default=True, type=int,
              help="Port of the vLLM started here (not with --llm-url).")  # fmt: skip
@click.option("--llm-per-region", is_flag=True, help="A vLLM per region (ports from --llm-port on).")
@click.option("--detach", is_flag=True, help="Leave it running (supervised); stop it with `voicemesh down`.")
@click.option("--skip-models", is_flag=True, help="Do not check the models first.")
@click.option("--supervise/--no-supervise", default=True, show_default=True,
              help="Re-provision a process that dies (off: a drill's region must stay dead).")  # fmt: skip
def up(
    regions: int, edges: int, llm_url: str | None, port: int, base_port: int, redis_port: int,
    llm_port: int, llm_per_region: bool, detach: bool, skip_models: bool, supervise: bool,
) -> None:  # fmt: skip
    """Run the local deployment: regions, Redis, edges and their front door (HAProxy on --port, the one
    client URL), provisioned by Terraform, supervised."""
    from voicemesh.models import ensure_models

    haproxy = _haproxy()  # before anything starts: the front door cannot be missing
    prometheus = prometheus_executable()
    state = paths.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    ledger = Ledger.load(state)
    with interruptible(_say):
        try:
            _take_over(ledger)
            ledger.owner = os.getpid()
            ledger.save()
            # Inherited by everything started from here on (pip, Terraform, what it starts).
            os.environ[TAG_ENV] = ledger.tag
            if not skip_models:
                _say("[1/3] models")
                ensure_models(report=_say, runtime=llm_url is None)
            _say(
                "[2/3] regions, Redis, edges and the front door (terraform, env local)"
                + ("" if llm_url else " with a vLLM per region" if llm_per_region else " with a shared vLLM")
            )
            env = environment(ENV, _say)
            variables: dict[str, object] = {
                "region_count": regions, "base_port": base_port, "llm_url": llm_url or "",
                "edge_count": edges, "edge_port": port + 1, "redis_port": redis_port, "llm_port": llm_port,
                "llm_per_region": llm_per_region and not llm_url,
                "frontdoor_port": port, "frontdoor_stats_port": port + edges + 1, "haproxy_bin": haproxy,
                "prometheus_port": free_port(), "prometheus_bin": prometheus,
                "api_key_path": str(_key_file("api-key", "vm-")),
                "admin_key_path": str(_key_file("admin-key", "vma-")),
            }  # fmt: skip
            planned = env.planned_variables(variables)
            ledger.record(
                Entry(name=_TERRAFORM_ENTRY, pid_dir=str(env.run_dir), ports=_planned_ports(planned))
            )
            deployment, _ = asyncio.run(infra_up(ENV, variables, report=_say))
            _say("[3/3] supervisor" if supervise else "[3/3] no supervisor (--no-supervise)")
            _announce(deployment.edges, deployment.frontdoor)
            if deployment.prometheus:
                console.print(
                    f"  prometheus: {deployment.prometheus['url']}  (rules and alerts: docs/observability.md)"
                )
            if detach:
                if supervise:
                    pid = _start_supervisor(ledger)
                    console.print(
                        f"running in the background, supervised (pid {pid}): `voicemesh down` stops it"
                    )
                else:
                    ledger.owner, ledger.detached = None, True  # nobody runs it; `down` finds it all
                    ledger.save()
                    console.print("running in the background: `voicemesh down` stops it")
                return
            if supervise:
                console.print("supervising: a process that dies is re-provisioned; Ctrl-C stops everything")
                asyncio.run(_supervise_forever())
            else:
                console.print("Ctrl-C stops everything")
                asyncio.run(asyncio.Event().wait())
        except Interrupted as exc:
            _teardown_or_fail(ledger, f"interrupted ({exc.name})", code=exc.exit_code)
        except VoicemeshError as exc:
            _teardown_or_fail(ledger, f"{exc.message} [{exc.code}]")


def _haproxy() -> str:
    from voicemesh.drills.frontdoor import FrontDoorError, haproxy_executable

    try:
        return haproxy_executable()
    except FrontDoorError as exc:
        fail(exc.message)


def _announce(edges: list[dict[str, object]], frontdoor: dict[str, object] | None) -> None:
    """The front door's URL is THE client URL; each edge's own URL is printed for debugging."""
    key, admin = api_key(), admin_key()
    front = str(frontdoor["url"]) if frontdoor else min((str(e["url"]) for e in edges), default="")
    console.print(f"[green]voicemesh is up[/green]: {len(edges)} edge(s) behind the front door")
    if frontdoor:
        console.print(f"  clients:  ws{front[4:]}/v1/realtime  (the front door, HAProxy)")
        console.print(
            f"  frontdoor health: {frontdoor['stats_url']}/health   stats: {frontdoor['stats_url']}/stats"
        )
    for e in sorted(edges, key=lambda e: str(e["url"])):
        url = str(e["url"])
        loc = e.get("location") or {}
        where = f"{loc.get('lat')},{loc.get('lon')}" if isinstance(loc, dict) else ""
        console.print(f"  edge {e['id']:<9} {url}  (debugging only; status: {url}/status)  at {where}")
    console.print(f"API key: {key}   admin key (status, ops): {admin}")
    if front:
        console.print(f"talk: {front}/#key={key}")
        console.print(f"ops:  {front}/ops#key={admin}")


@cli.command("down")
def down() -> None:
    """Stop everything `voicemesh up` started (even an interrupted or killed one), then check that no
    process and no listening port of it is left."""
    ledger = Ledger.load(paths.state_dir())
    with interruptible(_say):
        try:
            problems = _teardown(ledger)
        except Interrupted as exc:
            fail(f"interrupted ({exc.name}); run `voicemesh down` again", code=exc.exit_code)
    if problems:
        fail("; ".join(problems) + ": stop them by hand (`voicemesh infra status` lists them)")
    _say("stopped: no process and no listening port left")


@cli.command("supervise")
@click.option("--env", "env_name", default=ENV, show_default=True, help="Environment under infra/envs/.")
@click.option("--poll", "poll_s", default=0.25, show_default=True, type=click.FloatRange(min=0.05),
              help="Seconds between looks at the processes.")  # fmt: skip
def supervise(env_name: str, poll_s: float) -> None:
    """Re-provision (terraform apply -replace) any process of the deployment that dies, until stopped.
    `voicemesh up --detach` leaves one running; `voicemesh down` stops it first."""
    from voicemesh.supervisor import Supervisor

    async def main(stop: asyncio.Event) -> None:
        await Supervisor(environment(env_name, progress), report=progress, poll_s=poll_s).run(stop)

    run_until_signal(main)
