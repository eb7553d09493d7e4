"""What both sides of ``voicemesh bench e2e`` get alike: the options, the region's system prompt, and
the utterances (espeak-ng speech in several voices and lengths, made at run time) in each caller's
order."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from region.settings import RegionSettings
from voicemesh.speech import espeak
from wire.audio import STT_RATE, FloatAudio, write_wav
from wire.errors import VoicemeshError

SYSTEM_PROMPT = str(next(f.default for f in dataclasses.fields(RegionSettings) if f.name == "system_prompt"))
"""The region's own default system prompt; both sides get it."""

UTTERANCES: tuple[tuple[str, str, int], ...] = (
    # (text, espeak-ng voice, words per minute): several voices and lengths, about 1.5 to 5 s.
    ("What is the capital of France?", "en-us", 165),
    ("Tell me a fun fact about the moon.", "en-gb", 150),
    ("How do I boil an egg?", "en-us+f3", 160),
    ("Can you recommend a good book to read on a rainy weekend at home?", "en-gb-x-rp", 145),
    ("Why is the sky blue during the day but red at sunset?", "en-us+m3", 140),
    ("What should I pack for a short trip to the mountains?", "en-029", 150),
    ("How long does it take to walk five kilometres?", "en-gb-scotland", 155),
    ("What is a healthy breakfast I can make in ten minutes?", "en-us+f2", 150),
    ("Who painted the Mona Lisa?", "en-gb-x-gbclan", 160),
    ("How can I get better sleep when I work late shifts?", "en-us-nyc", 145),
    ("What does a bee do in winter?", "en-gb-x-gbcwmd", 155),
    ("Give me three ideas for a birthday present for my sister.", "en-us+m7", 150),
)
SPEECH_FLOOR = 0.02
"""Amplitude above which a sample counts as speech (espeak-ng's silence is exactly zero)."""
PAD_S = 0.3


@dataclass(frozen=True)
class E2eOptions:
    llm_url: str | None = None
    callers: tuple[int, ...] = (1, 2, 4)
    passes: int = 3
    utterances: int = 4
    max_output_tokens: int = 60
    warm_up: bool = True
    """One turn per side first, not counted (loads caches and lazy paths on both)."""
    json_out: str | None = None
    work_dir: str | None = None
    """Logs and utterance WAVs (default: a new temporary directory)."""


@dataclass(frozen=True)
class Utterance:
    text: str
    wav16: Path
    audio16: FloatAudio
    speech_end_s: float
    """From the start of the audio to the end of its last speech sample."""

    @property
    def seconds(self) -> float:
        return len(self.audio16) / STT_RATE


def make_utterances(n: int, work: Path) -> list[Utterance]:
    """The first ``n`` of ``UTTERANCES`` spoken by espeak-ng, 16 kHz, 0.3 s of silence either side."""
    if not 1 <= n <= len(UTTERANCES):
        raise VoicemeshError(f"--utterances must be 1 to {len(UTTERANCES)}, not {n}")
    out = []
    pad = np.zeros(int(PAD_S * STT_RATE), dtype=np.float32)
    for i, (text, voice, speed) in enumerate(UTTERANCES[:n]):
        audio = np.concatenate([pad, espeak(text, STT_RATE, voice=voice, speed=speed) * 0.8, pad])
        loud = np.flatnonzero(np.abs(audio) > SPEECH_FLOOR)
        wav = work / f"utterance-{i}.wav"
        write_wav(wav, audio, STT_RATE)
        out.append(Utterance(text, wav, audio, float(loud[-1] + 1) / STT_RATE))
    return out


def caller_order(caller: int, n: int) -> list[int]:
    """Caller ``caller`` speaks every utterance, starting at a different one than its neighbours."""
    return [(caller + k) % n for k in range(n)]
