"""What both sides of ``voicemesh bench e2e`` get alike: the options, the region's system prompt, and
the turns (espeak-ng speech in several voices and lengths, made at run time) in each caller's order.

A turn is a question, some with a ~0.8 s thinking pause mid-sentence (``PAUSED``), some with a
backchannel ("mm-hm", "yeah", "right") the caller says while the answer plays. The paused sentences
and backchannels are used by this bench only: nothing in voicemesh was tuned on them."""

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
PAUSED: tuple[tuple[str, str, str, int], ...] = (
    # (before the pause, after it, espeak-ng voice, words per minute)
    ("I would like to book a table for", "four people at eight tonight.", "en-us", 150),
    ("My flight number is", "B A four seven two, and I need to change it.", "en-gb", 145),
    ("Could you remind me to call", "my dentist tomorrow morning?", "en-us+f3", 155),
    ("The parcel I ordered last week was", "delivered to the wrong address.", "en-gb-x-rp", 150),
    ("I need a recipe that uses", "chicken, rice and some spinach.", "en-us+m3", 145),
    ("Please change one hundred dollars into", "euros for my holiday.", "en-029", 150),
    ("What time does the museum on", "Baker Street open on Sundays?", "en-gb-scotland", 150),
    ("My daughter wants to learn", "the piano, where should she start?", "en-us-nyc", 150),
)
PAUSE_S = 0.8
BACKCHANNELS: tuple[tuple[str, str, str], ...] = (
    # (what the caller says, what espeak-ng is given (phonemes in [[ ]]), voice)
    ("mm-hm", "[[m@'h@m]]", "en-us"),
    ("yeah", "yeah", "en-gb"),
    ("right", "right", "en-us+f2"),
)
BACKCHANNEL_AFTER_S = 1.0
"""The caller says its backchannel this long after the first audio of the answer reaches it."""
MODE_ORDER = ("server_vad", "smart_turn", "semantic_vad", "vad_only")
"""The turn modes a pass runs, in this order: voicemesh and Pipecat alternate."""
SPEECH_FLOOR = 0.02
"""Amplitude above which a sample counts as speech (espeak-ng's silence is exactly zero)."""
PAD_S = 0.3


@dataclass(frozen=True)
class E2eOptions:
    llm_url: str | None = None
    callers: tuple[int, ...] = (1, 2, 4)
    passes: int = 3
    utterances: int = 4
    modes: tuple[str, ...] = MODE_ORDER
    """voicemesh's ``turn_detection`` types and Pipecat's turn modes (``e2e_report.MODES``), run in
    this order in every pass."""
    max_output_tokens: int = 60
    warm_up: bool = True
    """One turn per side first, not counted (loads caches and lazy paths on both)."""
    json_out: str | None = None
    work_dir: str | None = None
    """Logs and utterance WAVs (default: a new temporary directory)."""
    command: str = ""
    """The command line that ran the bench (printed with the table)."""


@dataclass(frozen=True)
class Utterance:
    text: str
    wav16: Path
    audio16: FloatAudio
    speech_end_s: float
    """From the start of the audio to the end of its last speech sample."""
    paused: bool = False
    """The sentence has a thinking pause (``PAUSE_S``) in the middle."""
    backchannel: str = ""
    """What the caller says while the answer plays (nothing if empty)."""
    backchannel_wav16: Path | None = None
    backchannel16: FloatAudio | None = None

    @property
    def seconds(self) -> float:
        return len(self.audio16) / STT_RATE


def make_utterances(n: int, work: Path) -> list[Utterance]:
    """The first ``n`` of ``UTTERANCES`` spoken by espeak-ng, 16 kHz, 0.3 s of silence either side."""
    if not 1 <= n <= len(UTTERANCES):
        raise VoicemeshError(f"--utterances must be 1 to {len(UTTERANCES)}, not {n}")
    out = []
    for i, (text, voice, speed) in enumerate(UTTERANCES[:n]):
        audio = _padded(_speak(text, voice, speed))
        out.append(Utterance(text, _saved(audio, work / f"utterance-{i}.wav"), audio, _speech_end(audio)))
    return out


def _speak(text: str, voice: str, speed: int) -> FloatAudio:
    return espeak(text, STT_RATE, voice=voice, speed=speed) * 0.8


def _padded(*parts: FloatAudio) -> FloatAudio:
    """``parts`` joined by exactly ``PAUSE_S`` of silence (espeak-ng's own silence at the joins cut
    off), ``PAD_S`` of silence either side."""
    pad = np.zeros(int(PAD_S * STT_RATE), dtype=np.float32)
    gap = np.zeros(int(PAUSE_S * STT_RATE), dtype=np.float32)
    joined: list[FloatAudio] = []
    for i, part in enumerate(parts):
        loud = np.flatnonzero(np.abs(part) > SPEECH_FLOOR)
        start = 0 if i == 0 else int(loud[0])
        end = len(part) if i == len(parts) - 1 else int(loud[-1] + 1)
        joined += [gap, part[start:end]] if joined else [part[start:end]]
    return np.concatenate([pad, *joined, pad])


def _speech_end(audio: FloatAudio) -> float:
    return float(np.flatnonzero(np.abs(audio) > SPEECH_FLOOR)[-1] + 1) / STT_RATE


def _saved(audio: FloatAudio, wav: Path) -> Path:
    write_wav(wav, audio, STT_RATE)
    return wav


Script = tuple[str, tuple[str, ...], str, int, int | None]
"""(text, its parts (two for a paused sentence), voice, speed, backchannel index or None)."""


def turn_scripts() -> list[Script]:
    """Every turn of the e2e bench, in order. Paused and plain questions alternate; the first two of
    every four get a backchannel, so the first turn already has a pause and a backchannel (the
    smallest run measures both)."""
    out: list[Script] = []
    for k, (paused, plain) in enumerate(zip(PAUSED, UTTERANCES, strict=False)):
        (before, after, pv, ps), (text, voice, speed) = paused, plain
        bc = k % len(BACKCHANNELS) if k % 2 == 0 else None
        out.append((f"{before} {after}", (before, after), pv, ps, bc))
        out.append((text, (text,), voice, speed, None if bc is None else (bc + 1) % len(BACKCHANNELS)))
    return out


def make_turns(n: int, work: Path) -> list[Utterance]:
    """The first ``n`` turns of ``turn_scripts`` spoken by espeak-ng, 16 kHz, padded like
    ``make_utterances``."""
    scripts = turn_scripts()
    if not 1 <= n <= len(scripts):
        raise VoicemeshError(f"--utterances must be 1 to {len(scripts)}, not {n}")
    out = []
    for i, (text, parts, voice, speed, bc) in enumerate(scripts[:n]):
        audio = _padded(*(_speak(p, voice, speed) for p in parts))
        wav = _saved(audio, work / f"turn-{i}.wav")
        turn = Utterance(text, wav, audio, _speech_end(audio), paused=len(parts) > 1)
        if bc is not None:
            said, phonemes, bc_voice = BACKCHANNELS[bc]
            bc_audio = _speak(phonemes, bc_voice, 160)
            bc_wav = _saved(bc_audio, work / f"backchannel-{i}.wav")
            turn = dataclasses.replace(
                turn, backchannel=said, backchannel_wav16=bc_wav, backchannel16=bc_audio
            )
        out.append(turn)
    return out


def caller_order(caller: int, n: int) -> list[int]:
    """Caller ``caller`` speaks every utterance, starting at a different one than its neighbours."""
    return [(caller + k) % n for k in range(n)]
