"""The levers a profile reads from the environment, each with its default and why (measured in
docs/benchmarks.md): vLLM's niceness and dtype, the first chunk's words, the first decoding leg,
Whisper's window, Kokoro's wide threads, the edge's speculation pause. A bad value is refused with
the range it must be in."""

from __future__ import annotations

import os
from pathlib import Path

from region.settings import FULL_WINDOW_FRAMES

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

LATER_CHUNK_WORDS = (6, 12)
"""The clauses after the first grow (``TtsSettings.later_chunk_words``): at most 6 words, then 12,
also ending at a comma, then whole sentences. A whole sentence after a three-word first chunk took
longer to synthesise than those words play: the caller heard a silence mid-answer
(docs/benchmarks.md "Silences inside answers")."""

FIRST_AUDIO_HOLD_ENV = "VOICEMESH_FIRST_AUDIO_HOLD_MS"
FIRST_AUDIO_HOLD_MS = 0
"""How long an answer's first audio may wait for its next clause when that clause is expected to
take longer to synthesise than the first plays (``TtsSettings.first_audio_hold_s``; 0-5000 ms).
Off by default: on the shared 2-core box a 1 s hold added its second to first audio without a
measurable cut in the silences (Kokoro ran 3-4x slower than real time there, docs/benchmarks.md
"Silences inside answers"); try 1000 on a region whose synthesis keeps up with playback."""

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


def cpu_llm_dtype() -> str:
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


def llm_nice() -> int:
    return _env_int(LLM_NICE_ENV, 0, 0, 19)


def first_leg_tokens() -> int:
    return _env_int(FIRST_LEG_ENV, FIRST_LEG_TOKENS, 0, 4096)


def tts_wide_threads() -> int:
    return _env_int(TTS_WIDE_ENV, TTS_WIDE_THREADS, 0, 64)


def stt_window_frames() -> int:
    return _env_int(STT_WINDOW_ENV, STT_WINDOW_FRAMES, 1000, FULL_WINDOW_FRAMES)


def first_audio_hold_s() -> float:
    return _env_int(FIRST_AUDIO_HOLD_ENV, FIRST_AUDIO_HOLD_MS, 0, 5000) / 1000


def first_chunk_words() -> int:
    return _env_int(FIRST_CHUNK_ENV, FIRST_CHUNK_WORDS, 0, 64)


SPECULATE_ENV = "VOICEMESH_SPECULATE_MS"
"""The pause in the user's speech at which the edge starts the answer unseen
(``edge/realtime/speculation.py``);
0: off. The edge's default (``VadSettings.speculate_after_ms``) otherwise."""


def speculate_after_ms(default: int) -> int:
    return _env_int(SPECULATE_ENV, default, 0, 10_000)


BACKCHANNEL_ENV = "VOICEMESH_BACKCHANNEL_MS"
"""Speech over an answer pauses it, and a backchannel ("mm-hm", "yeah") this short or shorter
resumes it (``edge/realtime/backchannel.py``); longer speech, or other words, is a barge-in. 0: off
(a barge-in at once) unless a session turns it on. The edge's default
(``BackchannelSettings.max_ms``) otherwise."""


def backchannel_ms(default: int) -> int:
    return _env_int(BACKCHANNEL_ENV, default, 0, 10_000)
