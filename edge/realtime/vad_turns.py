"""What a session does as its server VAD hears the user (``edge/realtime/input_turns.py`` calls
them): speech starts, a barge-in stops the answer playing (unless it was only a backchannel:
``edge/realtime/backchannel.py``); a pause that may end the turn starts its
answer early (``edge/realtime/speculation.py``); the turn ends, its answer starts (or, without
``create_response``, its audio is transcribed). The speech events run on their own task: a failure
is answered as a client event's is, with an ``error`` event.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable

from edge.audio.turn_audio import TurnAudio
from edge.realtime.backchannel import BackchannelGate
from edge.realtime.conversation import Conversation
from edge.realtime.input_turns import InputTurns
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.realtime.transcription import InputTranscription
from edge.shared.errors import InternalError
from edge.shared.events import Send, error_event
from edge.shared.protocols import SpeechProbability, TurnModel
from edge.shared.settings import EdgeSettings
from edge.shared.state import SessionState
from wire.errors import ProtocolError, VoicemeshError

log = logging.getLogger("voicemesh.edge")


class VadTurns:
    def __init__(
        self,
        vad: SpeechProbability,
        state: SessionState,
        conversation: Conversation,
        send: Send,
        settings: EdgeSettings,
        *,
        responses: ResponseLifecycle,
        transcription: InputTranscription,
        save: Callable[[SessionState], Awaitable[None]],
        turn_model: TurnModel | None = None,
    ) -> None:
        self._state = state
        self._send = send
        self._responses = responses
        self._transcription = transcription
        self._save = save
        self.speaking = False
        """The server VAD heard speech start and not yet end: a turn is being spoken."""
        self.input = InputTurns(
            vad,
            state.turn_detection,
            conversation,
            send,
            max_buffer_s=settings.limits.max_buffer_s,
            on_speech_started=self._speech_started,
            on_turn_end=self._turn_ended,
            on_pause=self._speech_paused,
            on_resume=responses.drop_speculation,
            run_events=self._speech_events,
            pause_ms=settings.vad.speculate_after_ms,
            audio_format=state.input_audio_format,
            turn_model=turn_model,
            semantic_pause_ms=settings.vad.semantic_pause_ms,
            words=self._words_end_turn,
        )
        self.input.gate = BackchannelGate(
            state, settings.vad.backchannel, send, responses, self.input.audio, barge_in=self._speech_started,
            transcribe=transcription.words, heard=transcription.heard, run_events=self._speech_events,
        )  # fmt: skip

    async def _speech_events(self, work: Awaitable[None]) -> None:
        """The speech events the VAD's answers bring (``InputTurns``), on their own task: failures
        are answered as a client event's are, with an ``error`` event."""
        try:
            await work
            return
        except OSError:
            return  # the client went away: the connection handler ends the session
        except VoicemeshError as exc:  # a refusal (the client's fault or a store's): its class says how
            error = exc
        except Exception as exc:
            log.exception("session %s: speech events failed", self._state.id)
            error = InternalError(f"internal error handling speech: {type(exc).__name__}")
        with contextlib.suppress(OSError):  # (nobody awaits this task: nothing may escape it)
            await self._send(error_event(error))

    def _speech_started(self) -> None:
        self.speaking = True
        td = self._state.turn_detection
        if td is not None and td.interrupt_response:
            self._responses.cancel("turn_detected")  # barge-in: stop the answer now

    def _speech_paused(self, audio: TurnAudio) -> None:
        """A pause that may be the end of the turn: start its answer now
        (``edge/realtime/speculation.py``)."""
        td = self._state.turn_detection
        if td is not None and td.create_response:
            self._responses.speculate(audio.pcm16k())

    async def _words_end_turn(self) -> float | None:
        """``semantic_vad`` at a pause: how likely the words of the answer started there end the turn
        (its region's LLM; ``None``: no answer was started, or it gave none)."""
        spec = self._responses.speculative
        return None if spec is None else await spec.end_of_turn()

    async def _turn_ended(self) -> None:
        self.speaking = False
        td = self._state.turn_detection
        if td is None or not td.create_response:
            await self._transcription.request_pending()
            return
        try:
            self._responses.start(speech_stopped_at=self.input.stopped_at)
        except ProtocolError:
            await (
                self._transcription.request_pending()
            )  # no response takes the audio now: still transcribe it
            raise
        await self._save(self._state)  # the turn in flight: resumable from now


__all__ = ["VadTurns"]
