"""What ``voicemesh bench e2e`` measured, reduced to figures: per side and concurrency the median and
p95 time from the end of the caller's speech to the first audio back, their ratios (voicemesh /
pipecat), word error of each side's transcript against the known text, and how many first audio
chunks were cut mid-word. Pure functions over ``Sample``s, so the report is unit-tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

SIDES = ("voicemesh", "pipecat")


@dataclass
class Sample:
    """One caller's turn: one utterance spoken, the answer's first audio (or why none came)."""

    side: str
    callers: int
    pass_no: int
    caller: int
    utterance: int
    expected: str
    """What the espeak-ng speaker said."""
    ttfa_s: float | None = None
    """Last speech sample sent -> first audio delta/frame received."""
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


@dataclass
class SideFigures:
    turns: int
    answered: int
    p50_s: float
    p95_s: float
    wer: float
    """Word error rate of the side's transcripts against the spoken texts (all turns pooled)."""
    cut_mid_word: int
    """First audio chunks whose text ended inside a word."""
    errors: list[str] = field(default_factory=list)


@dataclass
class LevelFigures:
    callers: int
    sides: dict[str, SideFigures]

    @property
    def ratio_p50(self) -> float:
        return _ratio(self.sides["voicemesh"].p50_s, self.sides["pipecat"].p50_s)

    @property
    def ratio_p95(self) -> float:
        return _ratio(self.sides["voicemesh"].p95_s, self.sides["pipecat"].p95_s)


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


def side_figures(samples: Sequence[Sample]) -> SideFigures:
    times = [s.ttfa_s for s in samples if s.ttfa_s is not None]
    errs, total = 0, 0
    for s in samples:
        e, n = word_errors(s.expected, s.transcript)
        errs, total = errs + e, total + n
    return SideFigures(
        turns=len(samples),
        answered=len(times),
        p50_s=percentile(times, 50),
        p95_s=percentile(times, 95),
        wer=errs / total if total else float("nan"),
        cut_mid_word=sum(cut_mid_word(s.first_chunk_text, s.reply_text) for s in samples),
        errors=sorted({s.error for s in samples if s.error}),
    )


def summarize(samples: Sequence[Sample]) -> list[LevelFigures]:
    """Figures per concurrency level (ascending), both sides each."""
    levels = sorted({s.callers for s in samples})
    return [
        LevelFigures(
            callers=n,
            sides={
                side: side_figures([s for s in samples if s.callers == n and s.side == side])
                for side in SIDES
            },
        )
        for n in levels
    ]


TARGETS = {1: 0.5}
"""The issue's targets for the ratio (median and p95): 0.5 with one caller, 0.6 above."""


def target(callers: int) -> float:
    return TARGETS.get(callers, 0.6)


def median_stages(samples: Sequence[Sample]) -> dict[str, float]:
    """Per stage (in the order the turns reported them), the median over the turns that had it."""
    names: dict[str, list[float]] = {}
    for s in samples:
        for name, ms in s.stages_ms.items():
            names.setdefault(name, []).append(ms)
    return {name: float(np.median(values)) for name, values in names.items()}


def table(levels: Sequence[LevelFigures], samples: Sequence[Sample] = ()) -> str:
    """The printed summary: one row per side and concurrency, then the ratios, then where
    voicemesh's time went (median of each stage, when the turns reported them)."""
    head = f"{'callers':>7}  {'side':<10}{'turns':>6}{'p50 s':>8}{'p95 s':>8}{'WER':>7}{'cut':>5}"
    lines = [
        "End of speech -> first audio, voicemesh (edge, openai SDK) vs stock Pipecat, alternating passes",
        head,
    ]
    for lv in levels:
        for side in SIDES:
            f = lv.sides[side]
            lines.append(
                f"{lv.callers:>7}  {side:<10}{f'{f.answered}/{f.turns}':>6}{f.p50_s:>8.2f}{f.p95_s:>8.2f}"
                f"{f.wer:>7.1%}{f.cut_mid_word:>5}"
            )
        lines.append(
            f"{lv.callers:>7}  {'ratio':<10}{'':>6}{lv.ratio_p50:>8.2f}{lv.ratio_p95:>8.2f}"
            f"   (voicemesh / pipecat; target <= {target(lv.callers):.1f})"
        )
    for lv in levels:
        stages = median_stages([s for s in samples if s.callers == lv.callers])
        if stages:
            where = ", ".join(f"{name} {ms:.0f}" for name, ms in stages.items())
            lines.append(f"{lv.callers:>7}  voicemesh stages, p50 ms: {where}")
    for lv in levels:
        for side in SIDES:
            for err in lv.sides[side].errors:
                lines.append(f"{side} at {lv.callers} caller(s): {err}")
    return "\n".join(lines)


def as_json(levels: Sequence[LevelFigures], samples: Sequence[Sample], **meta: Any) -> dict[str, Any]:
    return {
        **meta,
        "levels": [
            {
                "callers": lv.callers,
                "ratio_p50": lv.ratio_p50,
                "ratio_p95": lv.ratio_p95,
                "sides": {k: asdict(v) for k, v in lv.sides.items()},
            }
            for lv in levels
        ],
        "samples": [asdict(s) for s in samples],
    }
