"""The caller's side of one turn, alike for voicemesh and Pipecat: what its microphone sends next
(``Speaker``) and what it heard when (``TurnLog``, on the turn's clock: ``e2e_turns`` says what the
times mean)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from voicemesh.bench.e2e_inputs import BACKCHANNEL_AFTER_S
from voicemesh.bench.e2e_report import Sample

SETTLE_S = 1.5
"""A turn is over once nothing was heard for this long after an answer (a system may answer again
when a late transcript or the backchannel starts a turn: that answer belongs to this turn too)."""


@dataclass
class TurnLog:
    t0: float = field(default_factory=time.monotonic)
    sentence_end_s: float | None = None
    backchannel_s: float | None = None
    answers: list[list[list[float]]] = field(default_factory=list)
    stops_s: list[float] = field(default_factory=list)
    answer_ends_s: list[float | None] = field(default_factory=list)
    """Per answer, when the system finished or abandoned it (``None``: not yet)."""
    answering: bool = False
    """Between a response's start and its end (Pipecat queues the end behind the answer's audio)."""
    responses_done: int = 0
    last_activity_s: float = 0.0
    _answer: object = None

    def now(self) -> float:
        return time.monotonic() - self.t0

    def audio(self, answer: object, seconds: float) -> None:
        """A chunk of ``answer``'s audio (any key telling answers apart) arrived, ``seconds`` long."""
        now = self.now()
        if answer != self._answer or not self.answers:
            self._answer = answer
            self.answers.append([])
            self.answer_ends_s.append(None)
        self.answers[-1].append([now, seconds])
        self.last_activity_s = now

    def response(self, started: bool) -> None:
        self.answering, self.last_activity_s = started, self.now()
        self.responses_done += not started
        if not started:
            self._answer_over()

    def _answer_over(self) -> None:
        if self.answer_ends_s and self.answer_ends_s[-1] is None:
            self.answer_ends_s[-1] = self.now()

    def stop(self) -> None:
        """The system abandoned an answer (a cancelled response; an interruption): it is over."""
        self.stops_s.append(self.now())
        if self.answering:
            self._answer_over()
        self.answering, self.last_activity_s = False, self.now()

    def first_audio_after_end(self) -> float | None:
        end = self.sentence_end_s
        arrivals = [a for answer in self.answers for a, _ in answer if end is not None and a >= end]
        return min(arrivals, default=None)

    def into(self, sample: Sample) -> Sample:
        sample.sentence_end_s, sample.backchannel_s = self.sentence_end_s, self.backchannel_s
        sample.answers, sample.stops_s, sample.answer_ends_s = self.answers, self.stops_s, self.answer_ends_s
        return sample.settle()


class Speaker:
    """The caller's microphone, one frame of ``step`` bytes at a time: the sentence, then silence,
    and the backchannel (if any) ``BACKCHANNEL_AFTER_S`` after the answer's first audio arrived."""

    def __init__(self, log: TurnLog, sentence: bytes, speech_end_byte: int, backchannel: bytes, step: int):
        self.log, self.step = log, step
        self._sentence, self._end_byte, self._backchannel = sentence, speech_end_byte, backchannel
        self._pos = 0
        self._bc_pos: int | None = None

    def next(self) -> bytes:
        """The next frame to send (call it right before sending, at real-time pace)."""
        log, step = self.log, self.step
        if self._pos < len(self._sentence):
            chunk = self._sentence[self._pos : self._pos + step]
            self._pos += step
            if log.sentence_end_s is None and self._pos >= self._end_byte:
                log.sentence_end_s = log.now()
            return chunk.ljust(step, b"\0")
        first = log.first_audio_after_end()
        if self._bc_pos is None and self._backchannel and first is not None:
            if log.now() >= first + BACKCHANNEL_AFTER_S:
                self._bc_pos, log.backchannel_s = 0, log.now()
        if self._bc_pos is not None and self._bc_pos < len(self._backchannel):
            chunk = self._backchannel[self._bc_pos : self._bc_pos + step]
            self._bc_pos += step
            log.last_activity_s = log.now()
            return chunk.ljust(step, b"\0")
        return bytes(step)

    def settled(self) -> bool:
        """The sentence (and backchannel) are said, an answer came and ended, and all was quiet since."""
        log = self.log
        speaking = self._pos < len(self._sentence) or (
            self._bc_pos is not None and self._bc_pos < len(self._backchannel)
        )
        return (
            not speaking
            and bool(log.answers)
            and not log.answering
            and log.now() - log.last_activity_s > SETTLE_S
        )
