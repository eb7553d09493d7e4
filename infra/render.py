"""Render what an environment would run, offline.

The cloud's Kubernetes objects: ``terraform apply`` of envs/k8s-render, which has no
provider (the modules only build data), in a scratch copy; its ``objects`` output is every object
envs/cloud-workloads would apply, by region."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.environment import INFRA_ROOT
from infra.terraform import TerraformAdapter
from infra.tooling import Toolchain

ENV = "k8s-render"


def _scratch_env(env: str, scratch: Path, variables: Mapping[str, object], source_root: Path) -> Path:
    """A copy of ``env`` and the modules in ``scratch``; ``variables`` added to (and overriding) the
    env's ``*.auto.tfvars.json``: loaded after them (lexical order), so these win."""
    shutil.copytree(source_root / "modules", scratch / "modules")
    shutil.copytree(source_root / "envs" / env, scratch / "envs" / env)
    work = scratch / "envs" / env
    (work / "z-given.auto.tfvars.json").write_text(json.dumps(dict(variables), indent=1))
    return work


def render_k8s(
    toolchain: Toolchain, variables: Mapping[str, object], scratch: Path, source_root: Path = INFRA_ROOT
) -> dict[str, list[dict[str, Any]]]:
    """Region id -> its cluster's objects in apply order. ``variables`` add to (and override) the
    env's ``*.auto.tfvars.json``; ``scratch`` is an empty directory this may fill."""
    work = _scratch_env(ENV, scratch, variables, source_root)
    tf = TerraformAdapter(work, toolchain=toolchain, state=scratch / "render.tfstate")
    tf.init()
    tf.apply({})
    objects = tf.outputs().get("objects") or {}
    return {str(region): list(items) for region, items in objects.items()}


def planned_outputs(
    toolchain: Toolchain,
    env: str,
    variables: Mapping[str, object],
    scratch: Path,
    source_root: Path = INFRA_ROOT,
) -> dict[str, Any]:
    """The outputs ``terraform plan`` of ``env`` knows before anything runs (nothing is applied: a
    plan of the local env starts no process). For comparing what an env would run, offline."""
    work = _scratch_env(env, scratch, variables, source_root)
    tf = TerraformAdapter(work, toolchain=toolchain, state=scratch / "t.tfstate")
    tf.init()
    return tf.planned_outputs({})
