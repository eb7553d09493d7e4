"""Render what an environment would run, offline.

The cloud's Kubernetes objects: ``terraform apply`` of envs/k8s-render, which has no
provider (the modules only build data), in a scratch copy; its ``objects`` output is every object
envs/cloud-workloads would apply, by region."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.environment import INFRA_ROOT
from infra.errors import TerraformFailed
from infra.terraform import TerraformAdapter
from infra.tooling import Toolchain

ENV = "k8s-render"


def render_k8s(
    toolchain: Toolchain, variables: Mapping[str, object], scratch: Path, source_root: Path = INFRA_ROOT
) -> dict[str, list[dict[str, Any]]]:
    """Region id -> its cluster's objects in apply order. ``variables`` add to (and override) the
    env's ``*.auto.tfvars.json``; ``scratch`` is an empty directory this may fill."""
    shutil.copytree(source_root / "modules", scratch / "modules")
    shutil.copytree(source_root / "envs" / ENV, scratch / "envs" / ENV)
    # Loaded after the env's own *.auto.tfvars.json (lexical order), so these win.
    (scratch / "envs" / ENV / "z-given.auto.tfvars.json").write_text(json.dumps(dict(variables), indent=1))
    tf = TerraformAdapter(scratch / "envs" / ENV, toolchain=toolchain, state=scratch / "render.tfstate")
    tf.init()
    tf.apply({})
    objects = tf.outputs().get("objects") or {}
    return {str(region): list(items) for region, items in objects.items()}


def _terraform(toolchain: Toolchain, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **toolchain.env()}
    return subprocess.run([str(toolchain.terraform), *args], cwd=cwd, env=env, capture_output=True, text=True)


def planned_outputs(
    toolchain: Toolchain,
    env: str,
    variables: Mapping[str, object],
    scratch: Path,
    source_root: Path = INFRA_ROOT,
) -> dict[str, Any]:
    """The outputs ``terraform plan`` of ``env`` knows before anything runs (nothing is applied: a
    plan of the local env starts no process). For comparing what an env would run, offline."""
    shutil.copytree(source_root / "modules", scratch / "modules")
    shutil.copytree(source_root / "envs" / env, scratch / "envs" / env)
    work = scratch / "envs" / env
    (work / "z-given.auto.tfvars.json").write_text(json.dumps(dict(variables), indent=1))
    plan = ["plan", "-input=false", "-no-color", "-out=plan.bin", f"-state={scratch}/t.tfstate"]
    for args in (["init", "-input=false", "-no-color"], plan, ["show", "-json", "plan.bin"]):
        done = _terraform(toolchain, args, work)
        if done.returncode != 0:
            raise TerraformFailed(f"terraform {args[0]} of {env} failed:\n{done.stderr or done.stdout}")
    outputs = json.loads(done.stdout).get("planned_values", {}).get("outputs", {})
    return {name: item.get("value") for name, item in outputs.items()}
