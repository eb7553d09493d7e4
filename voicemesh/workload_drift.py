"""Drift between two renders of the same workloads (``voicemesh/workloads.py``): the local env's plan
and the Kubernetes objects, compared after mapping mount paths and per-instance values (ports, ids,
hosts, locations, URLs) back to names. ``tests/infra/test_no_drift.py`` fails on any difference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicemesh.models.fetch import runtime_python
from voicemesh.workloads import Layout, vllm_command, vllm_env

INSTANCE_FLAGS = frozenset(
    {"--id", "--host", "--port", "--location", "--llm-url", "--store-url", "--redis-url"}
)
"""Flags whose values are per instance or per deployment (compared by presence and position only)."""

CONTAINER_ONLY_ENV = frozenset({"HOME"})
"""Set in a container for the image it runs (where a process may write), not a setting of the process:
not compared."""


@dataclass(frozen=True)
class Rendered:
    """One process as a target really runs it (after Terraform filled the placeholders)."""

    argv: Sequence[str]
    env: Mapping[str, str]
    mounts: Sequence[str]
    """Names of the mounts it reads."""


def normalize(p: Rendered, layout: Layout) -> tuple[tuple[str, ...], dict[str, str], tuple[str, ...]]:
    """Mount paths and the home as names, the executable as ``<voicemesh>``, instance values as
    ``<value>``: what must be equal on both targets."""
    paths = {layout.mount("models"): "<mount:models>", **{v: f"<mount:{k}>" for k, v in layout.files.items()}}
    paths[layout.home] = "<home>"
    ordered = sorted(paths.items(), key=lambda kv: -len(kv[0]))

    def name(value: str) -> str:
        for path, label in ordered:
            if value == path or value.startswith(path + "/"):
                return label + value[len(path) :]
        return value

    argv = list(p.argv)
    if argv and argv[0] == layout.voicemesh:
        argv[0] = "<voicemesh>"
    elif argv[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]:
        argv[0] = "<python>"  # the runtime's interpreter here, the vLLM image's in a pod
    out = ["<value>" if i and argv[i - 1] in INSTANCE_FLAGS else name(a) for i, a in enumerate(argv)]
    env = {k: name(v) for k, v in p.env.items() if k not in CONTAINER_ONLY_ENV}
    return tuple(out), env, tuple(sorted(p.mounts))


def differences(
    local: Mapping[str, Rendered], k8s: Mapping[str, Rendered], *, local_layout: Layout, k8s_layout: Layout
) -> list[str]:
    """What differs between the two targets' processes, one line each (empty: no drift)."""
    found: list[str] = []
    for proc in sorted(set(local) | set(k8s)):
        if proc not in local or proc not in k8s:
            found.append(f"{proc}: only in {'local' if proc in local else 'k8s'}")
            continue
        (la, le, lm), (ka, ke, km) = normalize(local[proc], local_layout), normalize(k8s[proc], k8s_layout)
        if la != ka:
            found.append(f"{proc}: argv differs: local {' '.join(la)} | k8s {' '.join(ka)}")
        for key in sorted(set(le) | set(ke)):
            if le.get(key) != ke.get(key):
                found.append(f"{proc}: env {key}: local {le.get(key)!r} | k8s {ke.get(key)!r}")
        if lm != km:
            found.append(f"{proc}: mounts differ: local {', '.join(lm)} | k8s {', '.join(km)}")
    return found


def rendered_local(commands: Mapping[str, Any], layout: Layout) -> dict[str, Rendered]:
    """The local env's ``commands`` output (one instance of each process) as :class:`Rendered`; the
    LLM as the vLLM command line its ``voicemesh llm serve --host H --port P --profile X`` runs."""
    found = {
        name: Rendered(argv=list(c["argv"]), env=dict(c["env"]), mounts=list(c["mounts"]))
        for name, c in commands.items()
    }
    if "llm" in found:
        argv = found["llm"].argv
        flag = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
        python = str(runtime_python())
        command = vllm_command(flag["--profile"], layout, python, flag["--host"], flag["--port"])
        found["llm"] = Rendered(argv=command, env=vllm_env(flag["--profile"]), mounts=found["llm"].mounts)
    return found


K8S_CONTAINERS = {
    "region": ("Deployment", "region"),
    "llm": ("Deployment", "llm"),
    "edge": ("Deployment", "edge"),
}
"""Process -> (kind of the object holding it, container name)."""


def rendered_k8s(objects: Sequence[Mapping[str, Any]]) -> dict[str, Rendered]:
    """One cluster's objects -> the containers that run the local env's processes, as :class:`Rendered`."""
    found: dict[str, Rendered] = {}
    for obj in objects:
        spec = obj.get("spec", {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []):
            for proc, (kind, container) in K8S_CONTAINERS.items():
                if obj.get("kind") == kind and c.get("name") == container:
                    found[proc] = Rendered(
                        argv=list(c.get("command", [])),
                        env={e["name"]: e["value"] for e in c.get("env", [])},
                        mounts=[m["name"] for m in c.get("volumeMounts", [])],
                    )
    return found
