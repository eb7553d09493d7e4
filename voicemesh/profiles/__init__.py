"""Profiles: which models a deployment runs. ``cpu`` (default) runs here; ``gpu`` is production.

Switching is one setting: ``VOICEMESH_PROFILE=gpu`` (or ``--profile gpu``). A profile is a preset of
the tiers' own settings, so nothing is translated twice.

Split by job: ``profile`` (what a profile holds), ``levers`` (the settings read from the environment,
with their defaults and why), ``presets`` (the ``cpu`` and ``gpu`` profiles, ``load_profile``).
"""

from voicemesh.profiles.levers import (
    CPU_LLM_DTYPE_ENV,
    CPU_LLM_DTYPES,
    FIRST_CHUNK_ENV,
    FIRST_CHUNK_WORDS,
    FIRST_LEG_ENV,
    FIRST_LEG_TOKENS,
    LATER_CHUNK_WORDS,
    LLM_NICE_ENV,
    NATIVE_BF16_FLAGS,
    SPECULATE_ENV,
    STT_WINDOW_ENV,
    STT_WINDOW_FRAMES,
    TTS_WIDE_ENV,
    TTS_WIDE_THREADS,
    backchannel_ms,
    cpu_flags,
    native_llm_dtype,
    speculate_after_ms,
)
from voicemesh.profiles.presets import (
    PROFILES,
    TOOL_PARSER_ARGS,
    VLLM_CPU_ONE_PROCESS_ARGS,
    cpu_profile,
    gpu_profile,
    load_profile,
)
from voicemesh.profiles.profile import EdgeModels, Profile

__all__ = [
    "CPU_LLM_DTYPES",
    "CPU_LLM_DTYPE_ENV",
    "FIRST_CHUNK_ENV",
    "FIRST_CHUNK_WORDS",
    "FIRST_LEG_ENV",
    "FIRST_LEG_TOKENS",
    "LATER_CHUNK_WORDS",
    "LLM_NICE_ENV",
    "NATIVE_BF16_FLAGS",
    "PROFILES",
    "SPECULATE_ENV",
    "STT_WINDOW_ENV",
    "STT_WINDOW_FRAMES",
    "TOOL_PARSER_ARGS",
    "TTS_WIDE_ENV",
    "TTS_WIDE_THREADS",
    "VLLM_CPU_ONE_PROCESS_ARGS",
    "EdgeModels",
    "Profile",
    "backchannel_ms",
    "cpu_flags",
    "cpu_profile",
    "gpu_profile",
    "load_profile",
    "native_llm_dtype",
    "speculate_after_ms",
]
