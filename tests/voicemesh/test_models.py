"""Model provisioning: idempotent, verified, and clear about what is wrong and how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicemesh import paths
from voicemesh.models import CATALOG, ensure_models, model_path, verify_models
from voicemesh.models.catalog import WHISPER_BASE
from wire.errors import ModelCorrupt, ModelMissing


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VOICEMESH_HOME", str(tmp_path))
    return tmp_path


def test_installed_models_verify(models: dict[str, Path]) -> None:
    assert verify_models() == []
    for spec in CATALOG:
        for art in spec.artifacts:
            assert (model_path(spec.name) / art.dest).stat().st_size > 0


def test_second_fetch_is_a_no_op(models: dict[str, Path]) -> None:
    lines: list[str] = []
    files = [p for path in models.values() for p in ([path] if path.is_file() else path.rglob("*"))]
    stamps = {f: f.stat().st_mtime_ns for f in files if f.is_file()}
    ensure_models(report=lines.append)
    assert not any("installing" in line or "assembling" in line for line in lines), lines
    # Nothing was written again: a no-op, whatever the machine's speed.
    assert {f: f.stat().st_mtime_ns for f in stamps} == stamps


def test_missing_model_says_how_to_fix(fresh_home: Path) -> None:
    with pytest.raises(ModelMissing, match="voicemesh models fetch"):
        model_path("whisper-base")


def test_fetch_into_an_empty_home(fresh_home: Path) -> None:
    found = ensure_models(runtime=False, only=("silero-vad",))
    assert (found["silero-vad"] / "silero_vad.onnx").exists()
    assert model_path("silero-vad") == found["silero-vad"]


def test_corrupt_package_is_refused(fresh_home: Path) -> None:
    # A damaged download: the parts exist and the package counts as installed, but bytes differ.
    root = paths.packages_dir() / WHISPER_BASE.name
    for art in WHISPER_BASE.artifacts:
        for src in art.sources:
            (root / src).parent.mkdir(parents=True, exist_ok=True)
            (root / src).write_bytes(b"not the model")
    (root / ".installed").write_text("\n".join(WHISPER_BASE.packages))
    with pytest.raises(ModelCorrupt, match=r"whisper-base/model.bin.*fetch --force"):
        ensure_models(runtime=False, only=("whisper-base",))
    assert not (paths.models_dir() / "whisper-base" / ".verified").exists()


def test_verify_finds_a_damaged_file(fresh_home: Path) -> None:
    ensure_models(runtime=False, only=("silero-vad",))
    target = paths.models_dir() / "silero-vad" / "silero_vad.onnx"
    data = bytearray(target.read_bytes())
    data[100] ^= 0xFF
    target.write_bytes(bytes(data))
    problems = verify_models()
    assert any("silero-vad/silero_vad.onnx: corrupt" in p for p in problems)
