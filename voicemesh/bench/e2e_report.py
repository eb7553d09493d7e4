"""What ``voicemesh bench e2e`` measured, reduced to figures: per system, turn mode and concurrency
the median and p95 time from the end of the caller's speech to the first audio back and their ratios
to Pipecat VAD-only, paused sentences cut, backchannels that stopped an answer, mid-answer silence,
word error of the transcripts against the known text, and first audio chunks cut mid-word. Pure
functions over ``Sample``s (the per-turn rules are ``e2e_turns``), unit-tested on their own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from voicemesh.bench import e2e_turns as turns

MODES: dict[str, str] = {
    "server_vad": "voicemesh",
    "semantic_vad": "voicemesh",
    "smart_turn": "pipecat",
    "vad_only": "pipecat",
}
"""Each turn mode the bench runs and the system it belongs to: voicemesh's ``turn_detection`` types;
Pipecat's default (Silero VAD + Smart Turn v3) and VAD-only (Silero VAD + speech timeout)."""
BASELINE = "pipecat vad_only"
"""What the time-to-first-audio ratios divide by."""
PIPECAT_DEFAULT = "pipecat smart_turn"


def key(mode: str) -> str:
    return f"{MODES[mode]} {mode}"


@dataclass
class Sample:
    """One caller's turn: one sentence spoken (maybe with a pause, maybe a backchannel during the
    answer), the answers heard (``voicemesh.bench.e2e_turns`` says what the times mean)."""

    side: str
    mode: str
    callers: int
    pass_no: int
    caller: int
    utterance: int
    expected: str
    """What the espeak-ng speaker said (the sentence; not the backchannel)."""
    paused: bool = False
    backchannel: str = ""
    sentence_end_s: float | None = None
    backchannel_s: float | None = None
    answers: list[list[list[float]]] = field(default_factory=list)
    """Per answer, its audio chunks as (arrival s, duration s)."""
    stops_s: list[float] = field(default_factory=list)
    answer_ends_s: list[float | None] = field(default_factory=list)
    """Per answer, when the system finished or abandoned it (its response's end)."""
    ttfa_s: float | None = None
    """Last speech sample sent -> first audio received (``None`` if cut or unanswered)."""
    cut: bool | None = None
    backchannel_stopped: bool | None = None
    transcript: str = ""
    first_chunk_text: str = ""
    reply_text: str = ""
    error: str = ""
    stages_ms: dict[str, float] = field(default_factory=dict)
    """voicemesh only: the turn's ``voicemesh_stages`` from ``response.done``
    (``edge/responses/stages.py``)."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sample:
        return cls(**d)

    def settle(self) -> Sample:
        """Fill the derived fields (cut, time to first audio, backchannel) from the times."""
        self.cut = turns.cut(self.paused, self.sentence_end_s, self.answers, self.backchannel_s)
        self.ttfa_s = turns.ttfa(self.sentence_end_s, self.answers, self.cut)
        self.backchannel_stopped = turns.backchannel_stopped(
            self.backchannel_s, self.answers, self.stops_s, self.answer_ends_s
        )
        return self


@dataclass
class ModeFigures:
    turns: int
    answered: int
    p50_s: float
    p95_s: float
    wer: float
    """Word error rate of the transcripts against the spoken sentences (all turns pooled)."""
    cut_mid_word: int
    """First audio chunks whose text ended inside a word."""
    paused: int
    cut: int
    """Paused sentences cut (``e2e_turns.cut``)."""
    backchannels: int
    """Backchannels said while an answer was playing."""
    backchannel_stops: int
    silence_p50_s: float
    """Median over answers of each answer's total mid-answer silence."""
    silence_longest_s: float
    """The longest single silence inside any answer."""
    errors: list[str] = field(default_factory=list)


@dataclass
class LevelFigures:
    callers: int
    modes: dict[str, ModeFigures]
    """By ``key(mode)``."""

    def ratio(self, name: str, which: str) -> float:
        """``name``'s ``which`` ("p50_s" or "p95_s") over the baseline's (nan if either is missing)."""
        if name not in self.modes or BASELINE not in self.modes:
            return float("nan")
        return _ratio(getattr(self.modes[name], which), getattr(self.modes[BASELINE], which))


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 and a == a and b == b else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


_WORD = re.compile(r"[a-z0-9']+")


def words(text: str) -> list[str]:
    """Lower-case words, punctuation dropped (what word error compares)."""
    return _WORD.findall(text.lower().replace("’", "'"))


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(substitutions + deletions + insertions, reference words): Levenshtein over words."""
    ref, hyp = words(reference), words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1], len(ref)


def cut_mid_word(first: str, full: str) -> bool:
    """Whether the first chunk's text stops inside a word of the whole reply: it ends in a letter
    or digit and the reply's next character (after the chunk's text) is one too."""
    first = first.rstrip()
    if not first or not first[-1].isalnum():
        return False
    at = full.find(first)
    if at < 0:
        return False
    rest = full[at + len(first) :]
    return bool(rest) and rest[0].isalnum()


def mode_figures(samples: Sequence[Sample]) -> ModeFigures:
    times = [s.ttfa_s for s in samples if s.ttfa_s is not None]
    errs, total = 0, 0
    for s in samples:
        e, n = word_errors(s.expected, s.transcript)
        errs, total = errs + e, total + n
    silences = [x for s in samples for x in turns.answer_silences(s.answers, s.backchannel_s)]
    heard_bc = [s.backchannel_stopped for s in samples if s.backchannel_stopped is not None]
    return ModeFigures(
        turns=len(samples),
        answered=len(times),
        p50_s=percentile(times, 50),
        p95_s=percentile(times, 95),
        wer=errs / total if total else float("nan"),
        cut_mid_word=sum(cut_mid_word(s.first_chunk_text, s.reply_text) for s in samples),
        paused=sum(s.paused for s in samples),
        cut=sum(bool(s.cut) for s in samples),
        backchannels=len(heard_bc),
        backchannel_stops=sum(heard_bc),
        silence_p50_s=percentile([x.total_s for x in silences], 50),
        silence_longest_s=max((x.longest_s for x in silences), default=float("nan")),
        errors=sorted({s.error for s in samples if s.error}),
    )


def summarize(samples: Sequence[Sample]) -> list[LevelFigures]:
    """Figures per concurrency level (ascending), every mode run at it, in ``MODES`` order."""
    levels = sorted({s.callers for s in samples})
    return [
        LevelFigures(
            callers=n,
            modes={
                key(mode): mode_figures(ss)
                for mode in MODES
                if (ss := [s for s in samples if s.callers == n and s.mode == mode])
            },
        )
        for n in levels
    ]


TARGETS = {1: 0.3}
"""The issue's targets for the time-to-first-audio ratio to Pipecat VAD-only (median and p95): 0.3
with one caller, 0.4 above."""


def target(callers: int) -> float:
    return TARGETS.get(callers, 0.4)


def misses(lv: LevelFigures, name: str) -> list[str]:
    """The issue's targets a voicemesh mode missed at this level (empty: all met)."""
    f, out = lv.modes[name], []
    pipecat = [m for k, m in lv.modes.items() if k.startswith("pipecat")]
    default = lv.modes.get(PIPECAT_DEFAULT)
    if f.cut > 0 or (default is not None and f.cut > default.cut):
        out.append("cut")
    if f.backchannel_stops > 0:
        out.append("backchannel")
    for which in ("p50_s", "p95_s"):
        if not lv.ratio(name, which) <= target(lv.callers):  # (nan misses too)
            out.append(f"ttfa {which[:3]}")
    for which in ("silence_p50_s", "silence_longest_s"):
        mine, theirs = getattr(f, which), [getattr(m, which) for m in pipecat]
        if mine > min(theirs, default=float("inf")):
            out.append("silence")
            break
    return out


def median_stages(samples: Sequence[Sample]) -> dict[str, float]:
    """Per stage (in the order the turns reported them), the median over the turns that had it."""
    names: dict[str, list[float]] = {}
    for s in samples:
        for name, ms in s.stages_ms.items():
            names.setdefault(name, []).append(ms)
    return {name: float(np.median(values)) for name, values in names.items()}


def as_json(levels: Sequence[LevelFigures], samples: Sequence[Sample], **meta: Any) -> dict[str, Any]:
    return {
        **meta,
        "levels": [
            {
                "callers": lv.callers,
                "ratios": {
                    name: {"p50": lv.ratio(name, "p50_s"), "p95": lv.ratio(name, "p95_s")}
                    for name in lv.modes
                },
                "modes": {k: asdict(v) for k, v in lv.modes.items()},
                "missed": {k: misses(lv, k) for k in lv.modes if k.startswith("voicemesh")},
            }
            for lv in levels
        ],
        "samples": [asdict(s) for s in samples],
    }
