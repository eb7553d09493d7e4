"""Everything a region node needs to know, as plain frozen dataclasses (built by the CLI/profiles)."""

from __future__ import annotations

from dataclasses import dataclass, field

FULL_WINDOW_FRAMES = 3000
"""Whisper's window: 30 s, 100 feature frames a second."""


@dataclass(frozen=True)
class SttSettings:
    model: str
    """A CTranslate2 Whisper directory, or a faster-whisper model id (gpu profile)."""
    device: str = "cpu"
    compute_type: str = "int8"
    cpu_threads: int = 2
    beam_size: int = 5
    """faster-whisper's (and Pipecat's) default. Greedy decoding (1) misheard espeak's "How do I boil
    an egg?" as "How do my boy learn?" where 5 got it right, for ~7 % more STT time on a short turn
    (docs/benchmarks.md "End to end")."""
    language: str = "en"
    window_frames: int = FULL_WINDOW_FRAMES
    """Whisper's encoder window for a turn that fits in it, in 10 ms feature frames (3000: Whisper's
    own 30 s). The cpu profile's 1500 encodes a short turn in a quarter of the time
    (``region/whisper_window.py``; its accuracy: docs/benchmarks.md "Transcripts")."""


@dataclass(frozen=True)
class LlmSettings:
    model: str
    """Path or model id that vLLM serves."""
    served_name: str
    url: str | None = None
    """The OpenAI-compatible server the region talks to. ``None``: ``voicemesh region serve`` starts a
    local vLLM first (``voicemesh/local_region.py``); the region itself never starts one."""
    runtime_python: str = ""
    """Interpreter of the vLLM runtime (its own venv), for the command line that starts vLLM."""
    vllm_args: tuple[str, ...] = ()
    vllm_env: dict[str, str] = field(default_factory=dict)
    chat_template_kwargs: dict[str, bool] = field(default_factory=dict)
    """Qwen3: ``{"enable_thinking": False}``."""
    end_of_turn_token: str = "<|im_end|>"
    """The token the chat template closes a message with, as vLLM shows it in ``top_logprobs``: its
    probability after the user's words says they ended their turn (``region/end_of_turn.py``)."""
    ready_timeout_s: float = 300.0
    first_leg_tokens: int = 0
    """Decode an answer's first this-many tokens, then hold decoding until its first clause is
    synthesised (``region.legs``): where the LLM and TTS share cores (opt-in on the cpu profile,
    ``VOICEMESH_FIRST_LEG_TOKENS``); 0: off."""
    nice: int = 0
    """Scheduling niceness vLLM runs at (0-19): above 0, the region's STT and TTS threads win the
    cores they share with decoding (the cpu profile); 0 where they share none (the gpu profile)."""
    watch_interval_s: float = 0.5
    """How often a serving region checks its LLM still answers (``region.llm_watch``)."""
    watch_misses: int = 3
    """Failed checks in a row (other than a refused connection: at once) before the LLM is down."""


@dataclass(frozen=True)
class TtsSettings:
    model: str
    voices: str
    providers: tuple[str, ...] = ("CPUExecutionProvider",)
    default_voice: str = "jf_alpha"
    lang: str = "en-us"
    speed: float = 1.0
    intra_op_threads: int = 1
    wide_intra_op_threads: int = 0
    """Threads for a clause started while nothing else runs in the region (``region.workload``);
    not above ``intra_op_threads`` (0): one session, always those threads."""
    first_chunk_words: int = 0
    """The first clause of an answer ends after this many words when no comma or sentence end came
    first (``wire.text.ClauseChunker.first_words``; 0: off): its audio starts sooner."""
    later_chunk_words: tuple[int, ...] = ()
    """Word caps of the clauses after the first (``wire.text.ClauseChunker.later_words``; empty:
    whole sentences): each short enough to be synthesised while the ones before it play."""
    first_audio_hold_s: float = 0.0
    """An answer's first audio waits at most this long for the next clause to keep up with it
    (``region.playout``: when that clause is expected to take longer than the first plays; 0: off)."""


@dataclass(frozen=True)
class AdmissionSettings:
    max_concurrent: int = 4
    """Turns that run at once. They share the cores, and the region orders their model runs so a
    turn's transcription and first clause come before other answers' later clauses
    (``region.cpu_order``, ``RegionSettings.model_runs`` at once): on two cores 4 callers got their
    first audio in 8.6 s p50 against 12.9 s with 2 slots and a queue (docs/benchmarks.md)."""
    max_queue: int = 4
    """Turns that wait for a slot; beyond this the region answers ``busy`` at once."""
    max_batch: int = 1
    """Speech batch items read aloud at once, on what live turns leave idle (``region.live_first``);
    0 refuses batch work."""


@dataclass(frozen=True)
class LimitSettings:
    max_audio_s: float = 30.0
    max_history_messages: int = 64
    max_history_chars: int = 32_000
    max_text_chars: int = 4_000


@dataclass(frozen=True)
class AuthSettings:
    keys_path: str | None = None
    """The region key set (``wire.region_keys``): every endpoint but a bare ``/health`` needs a token
    signed with one of its keys. ``None`` serves without authentication (only with an explicit
    ``--insecure-no-auth``: anyone who reaches the port runs turns)."""
    tls_cert: str | None = None
    """PEM certificate (chain) and key: serve ``https``/``wss`` instead of plain HTTP."""
    tls_key: str | None = None


@dataclass(frozen=True)
class RegionSettings:
    region_id: str
    stt: SttSettings
    llm: LlmSettings
    tts: TtsSettings
    host: str = "127.0.0.1"
    port: int = 9001
    admission: AdmissionSettings = field(default_factory=AdmissionSettings)
    model_runs: int = 2
    """STT and TTS runs at once across the region's turns, first audio first (``region.cpu_order``):
    a transcription or a first clause goes before the later clauses of answers already speaking."""
    limits: LimitSettings = field(default_factory=LimitSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    system_prompt: str = (
        "You are a helpful voice assistant. Answer in one to three short spoken sentences, "
        "without lists, markdown or emoji."
    )
