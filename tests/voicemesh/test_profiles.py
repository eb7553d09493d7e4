"""Profiles: cpu runs here; gpu must be complete and loadable, one setting away."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from voicemesh.cli.common import cli
from voicemesh.cli.main import _register
from voicemesh.profiles import FIRST_LEG_ENV, SPECULATE_ENV, STT_WINDOW_ENV, TTS_WIDE_ENV, load_profile


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
    assert Path(prof.llm.model).name == "qwen3-8b" and prof.llm.served_name == "qwen3-8b"
    assert prof.llm.chat_template_kwargs == {"enable_thinking": False}
    assert Path(prof.stt.model).name == "whisper-large-v3" and prof.stt.device == "cuda"
    assert prof.tts.providers[0] == "CUDAExecutionProvider"
    assert "--max-model-len" in prof.llm.vllm_args


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(ValueError, match="cpu, gpu"):
        load_profile("tpu")


def test_models_list_shows_the_gpu_profile() -> None:
    _register()
    result = CliRunner().invoke(cli, ["models", "list", "--profile", "gpu"])
    assert result.exit_code == 0, result.output


def test_the_cpu_profile_keeps_a_core_for_speech_and_the_gpu_profile_holds_nothing() -> None:
    """Issue 15's levers where the LLM and speech share CPU cores: vLLM in one process on half the
    cores (no busy-polling worker beside Kokoro); decoding held for the first clause and Kokoro on
    more threads when it runs alone. On the gpu profile decoding is on the GPU: none."""
    cpu, gpu = load_profile("cpu"), load_profile("gpu")
    args = " ".join(cpu.llm.vllm_args)
    assert "--distributed-executor-backend uni" in args
    assert cpu.llm.vllm_env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"  # vLLM's condition for uni on CPU
    assert 1 <= int(cpu.llm.vllm_env["OMP_NUM_THREADS"]) < max(2, os.cpu_count() or 1)
    assert cpu.llm.first_leg_tokens == 8 and gpu.llm.first_leg_tokens == 0  # no decoding on the CPU there
    assert cpu.tts.wide_intra_op_threads == 2 and gpu.tts.wide_intra_op_threads == 0
    assert cpu.stt.window_frames == 2000 and gpu.stt.window_frames == 3000  # two thirds of Whisper's window
    assert "uni" not in gpu.llm.vllm_args and "OMP_NUM_THREADS" not in gpu.llm.vllm_env


def test_the_first_leg_and_wide_kokoro_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(FIRST_LEG_ENV, "0")
    monkeypatch.setenv(TTS_WIDE_ENV, "0")
    cpu = load_profile("cpu")
    assert cpu.llm.first_leg_tokens == 0 and cpu.tts.wide_intra_op_threads == 0  # both off
    monkeypatch.setenv(FIRST_LEG_ENV, "10")
    monkeypatch.setenv(TTS_WIDE_ENV, "3")
    cpu = load_profile("cpu")
    assert cpu.llm.first_leg_tokens == 10 and cpu.tts.wide_intra_op_threads == 3
    monkeypatch.setenv(STT_WINDOW_ENV, "3000")
    assert load_profile("cpu").stt.window_frames == 3000  # Whisper's whole window
    monkeypatch.setenv(STT_WINDOW_ENV, "500")
    with pytest.raises(ValueError, match=STT_WINDOW_ENV):
        load_profile("cpu")
    monkeypatch.delenv(STT_WINDOW_ENV)
    monkeypatch.setenv(FIRST_LEG_ENV, "ten")
    with pytest.raises(ValueError, match=f"{FIRST_LEG_ENV} must be a whole number"):
        load_profile("cpu")


def test_the_early_start_at_a_pause_is_an_edge_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from voicemesh.cli.edge import edge_settings

    monkeypatch.delenv(SPECULATE_ENV, raising=False)
    assert edge_settings(profile="cpu").vad.speculate_after_ms == 192
    monkeypatch.setenv(SPECULATE_ENV, "0")
    assert edge_settings(profile="cpu").vad.speculate_after_ms == 0  # off
    monkeypatch.setenv(SPECULATE_ENV, "soon")
    with pytest.raises(ValueError, match=f"{SPECULATE_ENV} must be a whole number"):
        edge_settings(profile="cpu")
