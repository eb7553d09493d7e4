"""Profiles: cpu runs here; gpu must be complete and loadable, one setting away."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from voicemesh.cli.common import cli
from voicemesh.cli.main import _register
from voicemesh.profiles import load_profile


def test_default_is_cpu_and_its_files_exist(models: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOICEMESH_PROFILE", raising=False)
    prof = load_profile()
    assert prof.name == "cpu"
    assert prof.stt.device == "cpu" and prof.tts.providers == ("CPUExecutionProvider",)
    for path in prof.local_paths():
        assert path.exists(), path
    assert Path(prof.llm.model, "config.json").exists()
    assert Path(prof.llm.runtime_python).exists()


def test_gpu_profile_is_one_setting_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOICEMESH_PROFILE", "gpu")
    prof = load_profile()
    assert prof.name == "gpu"
    assert prof.llm.model.startswith("Qwen/Qwen3")
    assert prof.llm.chat_template_kwargs == {"enable_thinking": False}
    assert prof.stt.model == "large-v3" and prof.stt.device == "cuda"
    assert prof.tts.providers[0] == "CUDAExecutionProvider"
    assert "--max-model-len" in prof.llm.vllm_args


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="cpu, gpu"):
        load_profile("tpu")


def test_models_list_shows_the_gpu_profile() -> None:
    _register()
    result = CliRunner().invoke(cli, ["models", "list", "--profile", "gpu"])
    assert result.exit_code == 0, result.output
