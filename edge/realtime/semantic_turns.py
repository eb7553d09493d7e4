"""``semantic_vad``: the VAD cuts the speech, a turn model says where the turn ends.

At a short pause in the speech (``VadSettings.semantic_pause_ms``) the session's VAD stops where it
is (``InputAudio.held``) and the turn so far goes to the turn model (``edge/audio/turn_model.py``):
called complete, the turn ends there at once; else the VAD goes on, and the turn ends only after
the eagerness timeout of silence (``EAGERNESS_MS``: 8 / 4 / 2 s), speech coming back meanwhile
continuing the same turn. Holding the VAD makes the verdict apply at the pause it was asked about,
however fast the audio comes (a client sending faster than real time, a test): the silence after
it is not counted until the model has answered (one call: ~0.28 s on this 2-core machine, one
thread; docs/architecture.md).

The answer may already have started at that pause (``edge/realtime/speculation.py``); it is shown
only once the turn is called, by the model or by the timeout.
"""

from __future__ import annotations

import logging

from edge.audio.input_audio import InputAudio
from edge.audio.turn_audio import TurnAudio
from edge.shared.metrics import SEMANTIC_TURN_ENDS
from edge.shared.protocols import TurnModel
from edge.shared.state import TurnDetection

log = logging.getLogger("voicemesh.edge")

COMPLETE = 0.5
"""Pipecat's cut: a probability above it is "complete"."""


class SemanticTurns:
    def __init__(self, model: TurnModel | None, audio: InputAudio, *, pause_ms: int) -> None:
        self.model = model
        self.pause_ms = pause_ms
        """The pause at which the model is asked (the answer may start there too)."""
        self._audio = audio
        self.ended_by: str | None = None
        """What ended the last semantic turn: ``model`` or ``timeout`` (``None``: server VAD)."""
        self._called = False

    def on(self, detection: TurnDetection | None) -> bool:
        """Whether ``detection`` is ``semantic_vad`` with a model to ask; the VAD holds at its pauses."""
        semantic = detection is not None and detection.eagerness is not None and self.model is not None
        self._audio.hold_pauses = semantic
        return semantic

    async def judge(self, audio: TurnAudio) -> None:
        """Ask the model whether the turn is complete at the pause the VAD holds at, and go on: with
        the turn ended there (complete) or the silence counted on (not, or the model failed)."""
        complete = False
        try:
            assert self.model is not None  # (the VAD holds only when there is one: ``on``)
            probability = await self.model.complete(audio.pcm16k())
            complete = probability > COMPLETE
            log.debug("turn model: %.3f complete (turn of %d samples)", probability, len(audio))
        except Exception:  # the eagerness timeout still ends the turn: log, never fail the session
            log.exception("turn model failed: the turn ends at the eagerness timeout")
        finally:
            self._called = self._audio.release(end_turn=complete)

    def stopped(self, detection: TurnDetection | None) -> None:
        """A turn ended: counted by what ended it (``semantic_vad`` only)."""
        if detection is None or detection.eagerness is None:
            self.ended_by = None
            return
        self.ended_by = "model" if self._called else "timeout"
        self._called = False
        SEMANTIC_TURN_ENDS.labels(self.ended_by).inc()


__all__ = ["COMPLETE", "SemanticTurns"]
