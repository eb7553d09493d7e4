"""Each process of a deployment, defined once: its command line, environment and the files it reads.

The local Terraform environment (``infra/envs/local``) runs exactly these command lines, and the
Kubernetes modules (``infra/modules/*-k8s``) put the same ones in their containers: both receive
them as a Terraform variable (``workloads``), so neither builds a command of its own. Where they
must differ, they differ only through a :class:`Layout` (where files are, which host to bind)
and through placeholders, whole arguments that Terraform fills per instance:

``{id}`` region id, ``{port}`` listening port, ``{location}`` an edge's ``LAT,LON``, ``{llm_url}``
the LLM a region uses, ``{redis_url}`` the Redis an edge uses, ``{model_source}`` the bucket mirror
the model-fetch init container reads.

``voicemesh/workload_drift.py`` compares what each side really renders (the local env's plan, the
Kubernetes objects): ``tests/infra/test_no_drift.py``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from voicemesh import paths
from voicemesh.llm_server import vllm_argv, vllm_tracing
from voicemesh.models.catalog import VLLM_IMAGES
from voicemesh.profiles import load_profile

PLACEHOLDERS = ("{id}", "{port}", "{location}", "{llm_url}", "{redis_url}", "{model_source}")

DIR_MOUNTS = frozenset({"models", "tls"})
"""Mounts that are directories; every other mount is one file (in Kubernetes, one key of a Secret or
ConfigMap volume mounted on the file's directory)."""

CONTAINER_HOME = "/var/lib/voicemesh"
"""``VOICEMESH_HOME`` in the image (uid 10001, entrypoint ``voicemesh``); the model volume is
``$VOICEMESH_HOME/models`` in every container that reads models."""

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Layout:
    """Where a deployment's files are, as its processes see them, and what they bind to."""

    target: str
    """``local`` or ``k8s``."""
    home: str
    """``VOICEMESH_HOME``; the model volume is ``home/models``."""
    voicemesh: str
    """The ``voicemesh`` executable."""
    host: str
    """Address the served processes bind (loopback here, every address in a pod)."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Mount name -> the file (or directory) the process reads: region-keys, registry, api-keys,
    admin-keys, tls, region-ca."""
    redis_bin: str = "redis-server"

    def mount(self, name: str) -> str:
        if name == "models":
            return posixpath.join(self.home, "models")
        try:
            return self.files[name]
        except KeyError:
            raise ValueError(f"layout {self.target} has no file for the mount {name!r}") from None


def local_layout(*, home: str, voicemesh: str, files: Mapping[str, str]) -> Layout:
    """This machine: the files are the state directory's (0600, made by voicemesh), by path."""
    missing = {"region-keys", "registry", "api-keys", "admin-keys"} - set(files)
    if missing:
        raise ValueError(f"the local layout needs a path for: {', '.join(sorted(missing))}")
    return Layout(target="local", home=home, voicemesh=voicemesh, host=LOOPBACK, files=dict(files))


def k8s_layout() -> Layout:
    """A pod: Secrets and the registry ConfigMap mounted read-only under /etc/voicemesh."""
    return Layout(
        target="k8s",
        home=CONTAINER_HOME,
        voicemesh="voicemesh",
        host="0.0.0.0",  # a pod serves on its own address; the NetworkPolicy limits who reaches it
        files={
            "region-keys": "/etc/voicemesh/region-keys/region-keys.json",
            "registry": "/etc/voicemesh/registry/registry.json",
            "api-keys": "/etc/voicemesh/api-keys/keys",
            "admin-keys": "/etc/voicemesh/admin-keys/keys",
            "tls": "/etc/voicemesh/tls",
            "region-ca": "/etc/voicemesh/region-ca/ca.crt",
        },
    )


@dataclass(frozen=True)
class Process:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    mounts: Mapping[str, str]
    """Mount name -> the path the process reads (file or directory)."""

    def to_json(self) -> dict[str, Any]:
        """What Terraform gets: ``mount_path`` is the directory a volume is mounted on."""
        return {
            "argv": list(self.argv),
            "env": dict(self.env),
            "mounts": {
                name: {"path": path, "mount_path": path if name in DIR_MOUNTS else posixpath.dirname(path)}
                for name, path in self.mounts.items()
            },
        }


@dataclass(frozen=True)
class Settings:
    """What a deployment chooses; the rest of every command line follows from the profile."""

    profile: str = "cpu"
    max_concurrent: int = 4
    max_queue: int = 4
    drain_s: int = 20
    region_tls: bool = False
    region_ca: bool = False
    otlp_endpoint: str = ""
    """The OTLP/HTTP collector's base URL every process sends traces to (``<it>/v1/traces``); empty:
    no tracing, and no ``OTEL_*`` variable anywhere. Locally, tracing comes from this process's own
    ``OTEL_*`` variables instead, which every process inherits (docs/observability.md)."""

    def __post_init__(self) -> None:
        check_otlp_endpoint(self.otlp_endpoint)


def check_otlp_endpoint(url: str) -> str:
    """``url`` when it is empty or an http(s) base URL; ``ValueError`` naming the fix otherwise."""
    parts = urlsplit(url)
    if url and not (parts.scheme in ("http", "https") and parts.netloc):
        raise ValueError(
            f"OTLP endpoint {url!r}: give the collector's OTLP/HTTP base URL, such as "
            "http://otel-collector.observability:4318 (traces go to <it>/v1/traces), or leave it empty"
        )
    return url


def _home_env(layout: Layout) -> dict[str, str]:
    return {"VOICEMESH_HOME": layout.home}


def _tracing_env(s: Settings) -> dict[str, str]:
    """The standard ``OTEL_*`` variables of a traced deployment's processes; each names its own service."""
    if not s.otlp_endpoint:
        return {}
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": s.otlp_endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}


def region(layout: Layout, s: Settings) -> Process:
    mounts = {"models": layout.mount("models"), "region-keys": layout.mount("region-keys")}
    argv = [
        layout.voicemesh, "region", "serve", "--id", "{id}", "--host", layout.host, "--port", "{port}",
        "--profile", s.profile, "--max-concurrent", str(s.max_concurrent), "--max-queue", str(s.max_queue),
        "--keys", mounts["region-keys"], "--llm-url", "{llm_url}",
    ]  # fmt: skip
    if s.region_tls:
        mounts["tls"] = layout.mount("tls")
        argv += ["--tls-cert", f"{mounts['tls']}/tls.crt", "--tls-key", f"{mounts['tls']}/tls.key"]
    return Process(tuple(argv), {**_home_env(layout), **_tracing_env(s)}, mounts)


def edge(layout: Layout, s: Settings) -> Process:
    names = ("models", "registry", "region-keys", "api-keys", "admin-keys") + (
        ("region-ca",) if s.region_ca else ()
    )
    mounts = {n: layout.mount(n) for n in names}
    argv = [
        layout.voicemesh, "edge", "serve", "--host", layout.host, "--port", "{port}",
        "--profile", s.profile, "--location", "{location}",
        "--registry", mounts["registry"], "--region-keys", mounts["region-keys"],
        "--api-keys-file", mounts["api-keys"], "--admin-keys-file", mounts["admin-keys"],
        "--store-url", "{redis_url}", "--redis-url", "{redis_url}",
    ]  # fmt: skip
    if s.region_ca:
        argv += ["--region-ca", mounts["region-ca"]]
    env = {**_home_env(layout), "VOICEMESH_DRAIN_S": str(s.drain_s), **_tracing_env(s)}
    return Process(tuple(argv), env, mounts)


def llm(layout: Layout, s: Settings) -> Process:
    """vLLM with the profile's model and flags (tool-call parser included), beside the region that
    uses it (on loopback; in a pod also on the pod's address, for the metrics scraper). Here
    ``voicemesh llm serve`` runs it from the runtime ``voicemesh models fetch`` installs; in a pod,
    vLLM's own image (``VLLM_IMAGES``, the same version) runs the same command line
    (``voicemesh.llm_server.vllm_argv``)."""
    mounts = {"models": layout.mount("models")}
    if layout.target == "local":
        argv = (
            layout.voicemesh,
            "llm",
            "serve",
            "--host",
            LOOPBACK,
            "--port",
            "{port}",
            "--profile",
            s.profile,
        )
        # `voicemesh llm serve` derives vLLM's tracing from these itself.
        return Process(argv, {**_home_env(layout), **_tracing_env(s)}, mounts)
    # The same rule `voicemesh llm serve` applies, from the variables the other containers get.
    traced_argv, traced_env = vllm_tracing(_tracing_env(s))
    # vLLM's image expects root's HOME for its caches; the pod runs it as the image user's uid.
    env = {**vllm_env(s.profile), "HOME": "/tmp", **traced_env}
    # The pod's address: the metrics scraper reads its /metrics (the NetworkPolicy admits only it).
    cmd = [*vllm_command(s.profile, layout, "python3", layout.host, "{port}"), *traced_argv]
    return Process(tuple(cmd), env, mounts)


def vllm_command(profile: str, layout: Layout, python: str, host: str, port: str) -> list[str]:
    """What runs vLLM for ``profile`` in ``layout``: its weights found on the layout's model volume."""
    settings = load_profile(profile).llm
    try:
        relative = PurePosixPath(settings.model).relative_to(paths.models_dir().as_posix())
    except ValueError:
        raise ValueError(f"the {profile} profile's LLM {settings.model} is not on the model volume") from None
    model = posixpath.join(layout.mount("models"), str(relative))
    return vllm_argv(settings, python=python, host=host, port=port, model=model)


def vllm_env(profile: str) -> dict[str, str]:
    return dict(load_profile(profile).llm.vllm_env)


def model_fetch(layout: Layout, s: Settings) -> Process:
    """Fills the model volume from a bucket mirror (sha256-checked): never a model hub at pod start."""
    argv = (layout.voicemesh, "models", "fetch", "--profile", s.profile, "--no-runtime")
    env = {**_home_env(layout), "VOICEMESH_MODEL_SOURCE": "{model_source}"}
    return Process(argv, env, {"models": layout.mount("models")})


def redis(layout: Layout) -> Process:
    """The local edges' shared Redis (in memory only). In the cloud: one managed Redis per region."""
    argv = (layout.redis_bin, "--bind", layout.host, "--port", "{port}", "--save", "", "--appendonly", "no")
    return Process(argv, {}, {})


def workloads(layout: Layout, s: Settings) -> dict[str, dict[str, Any]]:
    """Every process, as the ``workloads`` Terraform variable of either target."""
    procs = {"region": region(layout, s), "edge": edge(layout, s), "llm": llm(layout, s)}
    if layout.target == "local":
        procs["redis"] = redis(layout)
    else:
        procs["model_fetch"] = model_fetch(layout, s)
        # The edge pool's cache: Piper and Silero are in the cpu set, whatever the regions run.
        procs["edge_model_fetch"] = model_fetch(layout, replace(s, profile="cpu"))
    return {name: p.to_json() for name, p in procs.items()}


def k8s_tfvars(s: Settings) -> dict[str, Any]:
    """``workloads.auto.tfvars.json`` of envs/k8s-render and envs/cloud-workloads: the processes,
    and the vLLM image of the profile's version."""
    return {
        "workloads": workloads(k8s_layout(), s),
        "region_capacity": s.max_concurrent,
        "llm_image": VLLM_IMAGES[s.profile],
    }
