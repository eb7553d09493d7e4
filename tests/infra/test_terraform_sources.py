"""The Terraform sources and the adapter, with the real Terraform 1.0.3 (offline)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.environment import INFRA_ROOT
from infra.errors import TerraformFailed
from infra.terraform import TerraformAdapter
from infra.tooling import Toolchain

CLOUD = ("envs/cloud-platform", "envs/cloud-platform/crds", "envs/cloud-workloads")


def _terraform(tc: Toolchain, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **tc.env()}
    return subprocess.run([str(tc.terraform), *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_everything_under_infra_is_terraform_fmt_clean(terraform: Toolchain) -> None:
    result = _terraform(terraform, "fmt", "-check", "-recursive", "-diff", str(INFRA_ROOT), cwd=INFRA_ROOT)
    assert result.returncode == 0, f"run `terraform fmt -recursive infra/`:\n{result.stdout}{result.stderr}"


def test_cloud_sources_exist_and_are_formatted(terraform: Toolchain) -> None:
    # They cannot be applied (or even initialised: no kubernetes/helm provider offline), but they
    # must parse: fmt refuses files with syntax errors.
    for rel in CLOUD:
        tf_files = sorted((INFRA_ROOT / rel).glob("*.tf"))
        assert tf_files, f"infra/{rel} has no .tf files"
        for f in tf_files:
            result = _terraform(terraform, "fmt", "-check", str(f), cwd=INFRA_ROOT)
            assert result.returncode == 0, f"{f}: {result.stdout}{result.stderr}"


def _local_workloads(tmp: Path) -> dict[str, object]:
    from voicemesh import workloads

    files = {name: str(tmp / name) for name in ("region-keys", "registry", "api-keys", "admin-keys")}
    layout = workloads.local_layout(home=str(tmp), voicemesh="/bin/true", files=files)
    return dict(workloads.workloads(layout, workloads.Settings()))


def _local_adapter(terraform: Toolchain, tmp_path: Path) -> TerraformAdapter:
    """The local env (and its modules) copied under ``tmp_path``, initialised: for plans."""
    shutil.copytree(INFRA_ROOT / "modules", tmp_path / "modules")
    shutil.copytree(INFRA_ROOT / "envs" / "local", tmp_path / "envs" / "local")
    tf = TerraformAdapter(tmp_path / "envs" / "local", toolchain=terraform, state=tmp_path / "t.tfstate")
    tf.init()
    return tf


def _terraform_dirs() -> list[Path]:
    return sorted({p.parent for p in INFRA_ROOT.rglob("*.tf") if ".terraform" not in p.parts})


def test_every_module_and_env_pins_terraform_and_its_providers_with_pessimistic_constraints() -> None:
    for d in _terraform_dirs():
        versions = d / "versions.tf"
        assert versions.exists(), f"{d.relative_to(INFRA_ROOT)} has no versions.tf"
        text = versions.read_text()
        assert 'required_version = "~> 1.0"' in text, versions
        for constraint in re.findall(r'version\s*=\s*"([^"]+)"', text):
            assert constraint.startswith("~> "), f"{versions}: {constraint!r} is not pinned with ~>"


def test_every_helm_chart_is_pinned() -> None:
    blocks = [
        (tf, block)
        for tf in INFRA_ROOT.rglob("*.tf")
        for block in re.findall(r'resource "helm_release" "[^"]+" \{(.*?)\n\}', tf.read_text(), re.S)
    ]
    assert len(blocks) >= 3  # KEDA, prometheus-operator's CRDs, the operator itself
    for tf, block in blocks:
        assert re.search(r"\n  version\s+=", block), f"{tf}: a helm_release without a version"


def test_the_local_env_commits_its_provider_lock() -> None:
    lock = (INFRA_ROOT / "envs" / "local" / ".terraform.lock.hcl").read_text()
    assert 'provider "registry.terraform.io/hashicorp/null"' in lock and 'version     = "2.1.2"' in lock


def test_local_env_validates_offline(terraform: Toolchain, tmp_path: Path) -> None:
    shutil.copytree(INFRA_ROOT / "modules", tmp_path / "modules")
    shutil.copytree(INFRA_ROOT / "envs" / "local", tmp_path / "envs" / "local")
    work = tmp_path / "envs" / "local"
    init = _terraform(terraform, "init", "-input=false", cwd=work)
    assert init.returncode == 0, init.stdout + init.stderr
    assert "hashicorp/null v2.1.2" in init.stdout  # from the PyPI-installed mirror, not the registry
    result = _terraform(terraform, "validate", "-json", cwd=work)
    assert '"valid": true' in result.stdout, result.stdout + result.stderr


def test_adapter_plans_and_reports_errors_with_a_next_step(terraform: Toolchain, tmp_path: Path) -> None:
    tf = _local_adapter(terraform, tmp_path)
    good = {
        "workloads": _local_workloads(tmp_path),
        "run_dir": str(tmp_path / "run"),
        "llm_url": "http://127.0.0.1:1/v1",
        "region_keys_path": str(tmp_path / "region-keys.json"),
    }
    assert tf.plan_has_changes(good) is True  # exit code 2 of -detailed-exitcode is "changes", not failure
    assert tf.plan_has_changes({**good, "llm_url": "", "region_count": 3}) is True  # + the shared vLLM
    # + a vLLM of each region's own, named after it, on the ports after llm_port (as in the cloud)
    assert tf.plan_has_changes({**good, "llm_url": "", "region_count": 3, "llm_per_region": True}) is True
    assert tf.outputs() == {}  # nothing applied yet
    with pytest.raises(TerraformFailed) as caught:
        tf.plan_has_changes({**good, "region_count": 7})
    assert "region_count must be 1, 2 or 3" in caught.value.message
    assert "retry" in caught.value.message


def test_llm_per_region_gives_each_region_a_vllm_of_its_own(terraform: Toolchain, tmp_path: Path) -> None:
    """``llm_per_region`` (``voicemesh up --llm-per-region``): one vLLM process per region, named after
    it, on the ports from ``llm_port`` on, instead of the shared one (as planned: nothing starts)."""
    tf = _local_adapter(terraform, tmp_path)
    base = {
        "workloads": _local_workloads(tmp_path),
        "run_dir": str(tmp_path / "run"),
        "region_keys_path": str(tmp_path / "region-keys.json"),
        "llm_port": 8200,
    }
    shared = tf.planned_outputs(base)
    own = tf.planned_outputs({**base, "llm_per_region": True})

    def llms(outputs: dict[str, Any]) -> dict[str, str]:
        return {k: v["pid_file"] for k, v in outputs["processes"].items() if ".llm" in k or "region_llm" in k}

    assert llms(shared) == {
        "module.llm[0].module.process.null_resource.process": str(tmp_path / "run" / "llm.pid")
    }
    assert llms(own) == {
        f'module.region_llm["{r}"].module.process.null_resource.process': str(
            tmp_path / "run" / f"llm-{r}.pid"
        )
        for r in ("eu-west", "us-east")
    }
    argv = own["commands"]["llm"]["argv"]
    assert argv[argv.index("--port") + 1] == "8200"  # eu-west's; us-east's is on 8201
