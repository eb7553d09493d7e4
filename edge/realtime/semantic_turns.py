"""``semantic_vad``: the VAD cuts the speech, the words and the voice say where the turn ends.

At a short pause in the speech (``VadSettings.semantic_pause_ms``) the session's VAD stops where it
is (``InputAudio.held``) and two models are asked whether the turn is complete there:

* the words: the answer already started at that pause (``edge/realtime/speculation.py``) asks its
  region how likely its transcript ends the turn (the region's LLM: ``region/end_of_turn.py``), as
  OpenAI defines ``semantic_vad`` ("based on the words said by the user");
* the voice: Smart Turn (``edge/audio/turn_model.py``) on the turn's audio, at the edge.

The rule (``complete``): the words decide when they are clear, the voice in between. Words whose
end the LLM finds unlikely (< ``WORDS_GO_ON``: a cut-off "I would like to book a table for" scores 0,
its end not among the 20 likeliest tokens) go on, whatever the voice; words it finds a likely end
(>= ``WORDS_END``: "... at eight tonight." 0.49) end the turn. Between, and when the words have no
answer (no answer started at the pause, no LLM answer in time), Smart Turn decides (an edge
without it: the words alone, then the timeout). Why the words first: Smart Turn hears intonation,
which synthetic or flat speech lacks (it scored espeak's cut halves 0.63-0.98 "complete"), while
the words of a cut sentence plainly go on; why the voice between: a small LLM's probabilities for
short, complete turns ("Tell me a joke." 0.03) are low, and the voice separates those better.

Called complete, the turn ends at that pause at once; else the VAD goes on, and the turn ends only
after the eagerness timeout of silence (``EAGERNESS_MS``: 8 / 4 / 2 s), speech coming back
meanwhile continuing the same turn. Holding the VAD makes the verdict apply at the pause it was
asked about, however fast the audio comes: the silence after it is not counted until the models
have answered. The words are awaited no longer than the eagerness timeout (past it, the timeout
would have ended the turn anyway).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edge.audio.input_audio import InputAudio
from edge.audio.turn_audio import TurnAudio
from edge.shared.metrics import SEMANTIC_TURN_ENDS
from edge.shared.protocols import TurnModel
from edge.shared.state import EAGERNESS_MS, TurnDetection

log = logging.getLogger("voicemesh.edge")

COMPLETE = 0.5
"""Pipecat's cut: a Smart Turn probability above it is "complete"."""
WORDS_GO_ON = 0.01
"""Below it, the words go on (a cut sentence's end is not among the LLM's likeliest tokens)."""
WORDS_END = 0.1
"""At or above it, the words end the turn (measured on SmolLM2-135M with the region's prompt: whole
sentences 0.16-0.92, "Tell me a joke." 0.03: the voice decides that one; cut ones 0)."""

Words = Callable[[], Awaitable[float | None]]
"""The region's probability that the words at this pause end the turn (``None``: none given)."""


@dataclass(frozen=True)
class Verdict:
    words: float | None
    voice: float | None
    complete: bool


def complete(words: float | None, voice: float | None) -> bool:
    """The rule (see the module's docstring)."""
    if words is not None and words < WORDS_GO_ON:
        return False
    if words is not None and words >= WORDS_END:
        return True
    return voice is not None and voice > COMPLETE


class SemanticTurns:
    def __init__(
        self, model: TurnModel | None, audio: InputAudio, *, pause_ms: int, words: Words | None = None
    ) -> None:
        self.model = model
        self.pause_ms = pause_ms
        """The pause at which the models are asked (the answer may start there too)."""
        self._audio = audio
        self._words = words
        self._wait_s = EAGERNESS_MS["auto"] / 1000
        self.ended_by: str | None = None
        """What ended the last semantic turn: ``model`` or ``timeout`` (``None``: server VAD)."""
        self.verdicts: collections.deque[Verdict] = collections.deque(maxlen=8)
        """The last few pauses' verdicts (logs, tests)."""
        self._called = False

    def on(self, detection: TurnDetection | None) -> bool:
        """Whether ``detection`` is ``semantic_vad`` with a model to ask (the words, Smart Turn, or
        both); the VAD holds at its pauses."""
        eagerness = detection.eagerness if detection is not None else None
        if eagerness is not None:
            self._wait_s = EAGERNESS_MS[eagerness] / 1000
        semantic = eagerness is not None and (self.model is not None or self._words is not None)
        self._audio.hold_pauses = semantic
        return semantic

    async def judge(self, audio: TurnAudio) -> None:
        """Ask the models whether the turn is complete at the pause the VAD holds at, and go on: with
        the turn ended there (complete) or the silence counted on (not, or no model answered)."""
        ended = False
        words = asyncio.ensure_future(self._words_now()) if self._words is not None else None
        try:
            voice = await self._voice(audio)
            text = None
            if words is not None:
                try:
                    text = await asyncio.wait_for(words, self._wait_s)
                except TimeoutError:
                    log.info("turn words: no answer within %.1f s: the voice decides", self._wait_s)
            ended = complete(text, voice)
            self.verdicts.append(Verdict(text, voice, ended))
            log.debug("turn at a pause: words %s, voice %s: complete=%s", text, voice, ended)
        finally:
            if words is not None and not words.done():
                words.cancel()
            self._called = self._audio.release(end_turn=ended)

    async def _voice(self, audio: TurnAudio) -> float | None:
        if self.model is None:  # an edge without Smart Turn: the words alone
            return None
        try:
            return await self.model.complete(audio.pcm16k())
        except Exception:  # the words or the eagerness timeout still end the turn: log, never fail
            log.exception("turn model failed: the words or the eagerness timeout end the turn")
            return None

    async def _words_now(self) -> float | None:
        assert self._words is not None
        try:
            return await self._words()
        except Exception:  # as the voice's: the turn still ends
            log.exception("turn words failed: the voice or the eagerness timeout end the turn")
            return None

    def stopped(self, detection: TurnDetection | None) -> None:
        """A turn ended: counted by what ended it (``semantic_vad`` only)."""
        if detection is None or detection.eagerness is None:
            self.ended_by = None
            return
        self.ended_by = "model" if self._called else "timeout"
        self._called = False
        SEMANTIC_TURN_ENDS.labels(self.ended_by).inc()


__all__ = ["COMPLETE", "WORDS_END", "WORDS_GO_ON", "SemanticTurns", "Verdict", "complete"]
