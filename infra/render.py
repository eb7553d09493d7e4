"""Render the cloud's Kubernetes objects offline: ``terraform apply`` of envs/k8s-render, which has no
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
