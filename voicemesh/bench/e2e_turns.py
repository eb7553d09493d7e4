"""What happened in one turn of ``voicemesh bench e2e``, by rules both systems are held to alike.

A turn's times are seconds on the caller's clock from the start of the turn: when the frame holding
the sentence's last speech sample was sent (``sentence_end_s``), when the backchannel's first frame
was sent (``backchannel_s``), when each answer's audio chunks arrived (and how long each plays), and
when the system abandoned an answer (``stops_s``: voicemesh's ``response.done`` with status
``cancelled``; Pipecat's ``InterruptionFrame``, what its output transport stops playback on).
The caller plays an answer's chunks back to back, each at its arrival or the end of the one before.

- **cut**: a sentence with a thinking pause was cut if answer audio reached the caller before the
  sentence's end was sent, or if more than one answer to it was heard (answers starting before the
  backchannel, if any). A cut turn has no time to first audio.
- **time to first audio**: the first answer chunk's arrival minus ``sentence_end_s``.
- **backchannel stopped the answer**: an answer was in progress when the backchannel began (its
  first chunk had arrived, and its playback had not ended or the system had not finished it: a slow
  clause is a silence inside the answer) and a stop signal came after the backchannel began and
  before the answer was over. A backchannel said when no answer was in progress counts in neither
  direction.
- **mid-answer silence**: ``silences.mid_answer_silences`` of each answer to the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence

from voicemesh.bench.silences import Silences, mid_answer_silences

Chunks = Sequence[Sequence[float]]
"""One answer's audio chunks: (arrival s, duration s) in arrival order."""


def playback_end(chunks: Chunks) -> float:
    end = float("-inf")
    for arrival, duration in chunks:
        end = max(arrival, end) + duration
    return end


def sentence_answers(answers: Sequence[Chunks], backchannel_s: float | None) -> list[Chunks]:
    """The answers to the sentence: those whose first chunk came before the backchannel began."""
    return [a for a in answers if a and (backchannel_s is None or a[0][0] < backchannel_s)]


def cut(
    paused: bool, sentence_end_s: float | None, answers: Sequence[Chunks], backchannel_s: float | None
) -> bool | None:
    """Whether a paused sentence was cut (``None`` for a sentence without a pause)."""
    if not paused or sentence_end_s is None:
        return None
    heard = sentence_answers(answers, backchannel_s)
    early = any(arrival < sentence_end_s for a in heard for arrival, _ in a)
    return early or len(heard) > 1


def ttfa(sentence_end_s: float | None, answers: Sequence[Chunks], was_cut: bool | None) -> float | None:
    if was_cut or sentence_end_s is None:
        return None
    firsts = [a[0][0] for a in answers if a]
    return min(firsts) - sentence_end_s if firsts else None


def answer_over(chunks: Chunks, ended_s: float | None) -> float:
    """When the caller had the whole answer: its playback's end, or later if the system was still
    producing it (a slow clause leaves a silence, not an end)."""
    end = playback_end(chunks)
    return end if ended_s is None else max(end, ended_s)


def backchannel_stopped(
    backchannel_s: float | None,
    answers: Sequence[Chunks],
    stops_s: Sequence[float],
    ends_s: Sequence[float | None] = (),
) -> bool | None:
    """Whether the backchannel stopped the answer in progress when it began (``None``: no
    backchannel, or no answer in progress then). ``ends_s``: per answer, when the system finished
    or abandoned it."""
    if backchannel_s is None:
        return None
    b = backchannel_s
    for i, chunks in enumerate(answers):
        over = answer_over(chunks, ends_s[i] if i < len(ends_s) else None)
        if chunks and chunks[0][0] <= b < over:
            return any(b <= s <= over for s in stops_s)
    return None


def answer_silences(
    answers: Sequence[Chunks], backchannel_s: float | None, floor_s: float = 0.15
) -> list[Silences]:
    return [
        mid_answer_silences([(a, d) for a, d in chunks], floor_s=floor_s)
        for chunks in sentence_answers(answers, backchannel_s)
    ]
