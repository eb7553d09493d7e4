"""No drift between the local deployment and the Kubernetes one: for the region, the edge and the LLM,
what the local env's plan would run (real Terraform, nothing started) and what the Kubernetes
containers run (envs/k8s-render) are the same command line, environment and mounts once mount paths
and per-instance values (ports, ids, hosts, locations, URLs) are mapped back to names. That the
local processes really run that command line: tests/infra/test_local_env.py (/proc cmdline)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from infra.render import planned_outputs, render_k8s
from infra.tooling import Toolchain
from voicemesh import workloads
from voicemesh.workload_drift import Rendered, differences, rendered_k8s, rendered_local


def _local_layout(tmp: Path) -> workloads.Layout:
    state = tmp / "home" / "state"
    return workloads.local_layout(
        home=str(tmp / "home"),
        voicemesh="/opt/venv/bin/voicemesh",
        files={
            "region-keys": str(state / "region-keys.json"),
            "registry": str(state / "registry.json"),
            "api-keys": str(state / "api-key"),
            "admin-keys": str(state / "admin-key"),
        },
    )


def _local(terraform: Toolchain, settings: workloads.Settings, tmp: Path) -> dict[str, Rendered]:
    layout = _local_layout(tmp)
    variables = {
        "workloads": workloads.workloads(layout, settings),
        "run_dir": str(tmp / "run"),
        "llm_url": "",  # the env's own vLLM: its command is compared too
        "edge_count": 1,
        "max_concurrent": settings.max_concurrent,
    }
    outputs = planned_outputs(terraform, "local", variables, tmp / "plan")
    return rendered_local(outputs["commands"], layout)


def _k8s(terraform: Toolchain, tfvars: dict[str, Any], tmp: Path) -> dict[str, dict[str, Rendered]]:
    return {region: rendered_k8s(objs) for region, objs in render_k8s(terraform, tfvars, tmp).items()}


@pytest.mark.parametrize("profile", ["cpu", "gpu"])
def test_local_and_kubernetes_run_the_same_processes(
    terraform: Toolchain, tmp_path: Path, profile: str
) -> None:
    settings = workloads.Settings(profile=profile, max_concurrent=8, max_queue=16)
    local = _local(terraform, settings, tmp_path / "local")
    clusters = _k8s(terraform, workloads.k8s_tfvars(settings), tmp_path / "k8s")
    assert set(local) == {"region", "edge", "llm"}
    for region, k8s in clusters.items():
        found = differences(
            local, k8s, local_layout=_local_layout(tmp_path / "local"), k8s_layout=workloads.k8s_layout()
        )
        assert found == [], f"{region}: the cloud drifts from the local deployment:\n" + "\n".join(found)
    # The flags the issue found missing in the cloud are there on both sides.
    edge, llm = local["edge"].argv, local["llm"].argv
    assert edge[edge.index("--profile") + 1] == profile
    assert {"--location", "--redis-url", "--store-url", "--api-keys-file", "--admin-keys-file"} <= set(edge)
    # vLLM's flags (the tool-call parser included) come from the profile, on both sides.
    assert llm[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert {"--enable-auto-tool-choice", "--tool-call-parser"} <= set(llm)


def test_a_change_on_one_side_is_reported(terraform: Toolchain, tmp_path: Path) -> None:
    """The Kubernetes side gets an edge definition with one flag dropped and one env value changed;
    the check names both, and only those."""
    settings = workloads.Settings(profile="gpu")
    local = _local(terraform, settings, tmp_path / "local")
    tfvars = copy.deepcopy(workloads.k8s_tfvars(settings))
    argv = tfvars["workloads"]["edge"]["argv"]
    i = argv.index("--location")
    del argv[i : i + 2]
    tfvars["workloads"]["edge"]["env"]["VOICEMESH_DRAIN_S"] = "5"
    k8s = _k8s(terraform, tfvars, tmp_path / "k8s")["eu-west"]

    found = differences(
        local, k8s, local_layout=_local_layout(tmp_path / "local"), k8s_layout=workloads.k8s_layout()
    )
    assert len(found) == 2, found
    assert found[0].startswith("edge: argv differs: local <voicemesh> edge serve"), found
    assert "--location" in found[0].split(" | ")[0] and "--location" not in found[0].split(" | ")[1]
    assert found[1] == "edge: env VOICEMESH_DRAIN_S: local '20' | k8s '5'"


def test_differences_covers_mounts_and_missing_processes() -> None:
    layout = workloads.k8s_layout()
    base = Rendered(argv=["voicemesh", "llm", "serve"], env={}, mounts=["models"])
    assert differences({"llm": base}, {"llm": base}, local_layout=layout, k8s_layout=layout) == []
    other = Rendered(argv=base.argv, env={}, mounts=[])
    found = differences({"llm": base}, {"llm": other, "edge": base}, local_layout=layout, k8s_layout=layout)
    assert found == ["edge: only in k8s", "llm: mounts differ: local models | k8s "]
