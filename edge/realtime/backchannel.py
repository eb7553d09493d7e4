"""Speech over an answer: an interruption, or only a backchannel ("mm-hm", "yeah")?

When speech starts while an answer plays (and the session has ``interrupt_response`` and
``voicemesh_backchannel`` on), the answer's audio pauses at once (``Player.pause``: the client plays
out what it holds, at most the player's lead) and the speech is held: no event goes out for it yet.

* Still voiced ``BackchannelSettings.max_ms`` after it began (in audio time, as the VAD hears it;
  the silence the VAD waits for before ``speech_stopped`` does not count):
  an interruption; the held ``speech_started`` goes out and the answer is cancelled
  (``turn_detected``), truncated at what was heard, as a barge-in always was.
* Stopped sooner: its words come from a region's transcribe-only turn. Only backchannel words (or
  none: a cough) and the answer resumes where it paused; the speech is dropped, the client saw
  nothing of it (no ``speech_started``/``stopped``, no item, no response). Other words, or no
  transcript in time: a barge-in as above, then the turn goes on as any turn (``speech_stopped``,
  ``committed``, its answer), its transcript already known (the region does no second STT).

Held ``speech_started`` is why the transports stay consistent: the WebRTC and Twilio bridges drop
their unplayed audio on it (``output_audio_buffer.cleared``), and a stock client stops its own
playback on it, so a backchannel must not send it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from edge.audio.input_audio import InputAudio
from edge.audio.turn_audio import TurnAudio
from edge.realtime.backchannel_rules import is_backchannel
from edge.realtime.response_lifecycle import ResponseLifecycle
from edge.responses.response import Response
from edge.shared.events import Send
from edge.shared.metrics import SPEECH_OVER_ANSWERS
from edge.shared.settings import BackchannelSettings
from edge.shared.state import SessionState
from edge.turns.transcribe_turn import TranscriptionResult
from wire.errors import VoicemeshError

log = logging.getLogger(__name__)


class Transcribe(Protocol):
    """16 kHz PCM16 -> a transcribe-only turn's result (``InputTranscription.words``)."""

    def __call__(self, pcm16k: bytes, *, prompt: str | None = None) -> Awaitable[TranscriptionResult]: ...


Heard = Callable[[str, str, int], Awaitable[None]]
"""``InputTranscription.heard``: an item's transcript, known."""


@dataclass
class _Held:
    response: Response
    started: str
    """Its ``speech_started`` event, not sent yet."""
    deadline_ms: int
    """Where in the audio the speech, still going, is an interruption."""
    interrupting: asyncio.Task[None] | None = None


class BackchannelGate:
    """The session's ``SpeechGate`` (``edge/realtime/input_turns.py``)."""

    def __init__(
        self,
        state: SessionState,
        settings: BackchannelSettings,
        send: Send,
        responses: ResponseLifecycle,
        audio: InputAudio,
        *,
        barge_in: Callable[[], None],
        transcribe: Transcribe,
        heard: Heard,
        run_events: Callable[[Awaitable[None]], Coroutine[Any, Any, None]],
    ) -> None:
        self._state = state
        self._settings = settings
        self._send = send
        self._responses = responses
        self._audio = audio
        self._barge_in = barge_in
        self._transcribe = transcribe
        self._heard = heard
        self._run_events = run_events
        self._held: _Held | None = None
        self._transcript: str | None = None
        """The words of the speech last released as a turn."""

    def hold(self, started: str, audio_start_ms: int) -> bool:
        td = self._state.turn_detection
        response = self._responses.response
        if (
            td is None
            or not (td.interrupt_response and td.voicemesh_backchannel)
            or response is None
            or response.cancelling
            or not response.frames.output_audio  # (text only: nothing plays, nothing to pause)
        ):
            return False
        response.player.pause()
        onset_ms = audio_start_ms + td.prefix_padding_ms  # (VAD reports the start that much early)
        self._held = _Held(response, started, onset_ms + self._settings.max_ms)
        self._transcript = None
        self._audio.on_heard = self._heard_to
        return True

    def _heard_to(self, audio_ms: int) -> None:
        """The VAD heard the held speech go on to ``audio_ms``: past the bound, it interrupts now."""
        held = self._held
        if held is None or held.interrupting is not None or audio_ms < held.deadline_ms:
            return
        self._audio.on_heard = None
        SPEECH_OVER_ANSWERS.labels("long").inc()
        held.interrupting = asyncio.get_running_loop().create_task(
            self._run_events(self._interrupt(held)), name="barge-in"
        )

    async def _interrupt(self, held: _Held) -> None:
        await self._send(held.started)
        self._barge_in()  # (the session cancels the answer: ``turn_detected``)

    async def release(self, audio: TurnAudio) -> bool:
        held, self._held = self._held, None
        self._audio.on_heard = None
        if held is None:
            return False
        if held.interrupting is not None:  # went on past the bound: already a barge-in
            await held.interrupting
        else:
            asked = time.perf_counter()
            words = await self._words(audio)
            backchannel = words is not None and is_backchannel(words, self._settings.words)
            outcome = "backchannel" if backchannel else "unheard" if words is None else "words"
            log.info(
                "session %s: speech over the answer: %s %r (heard in %.2f s)",
                self._state.id, outcome, words, time.perf_counter() - asked,
            )  # fmt: skip
            SPEECH_OVER_ANSWERS.labels(outcome).inc()
            if backchannel:
                held.response.player.resume()
                return True
            self._transcript = words
            await self._interrupt(held)
        if held.response is self._responses.response:
            await self._responses.finished()  # the cancelled answer's end, before this turn's answer
        return False

    def abandon(self) -> None:
        held, self._held = self._held, None
        self._audio.on_heard = None
        if held is not None and held.interrupting is None:
            held.response.player.resume()

    async def committed(self, item_id: str, audio: TurnAudio) -> None:
        transcript, self._transcript = self._transcript, None
        if transcript is not None:  # already heard: the turn's answer needs no second STT
            await self._heard(item_id, transcript, len(audio.pcm16k()))

    async def _words(self, audio: TurnAudio) -> str | None:
        """What the speech said (``""``: nothing); ``None``: no region told in time."""
        try:
            async with asyncio.timeout(self._settings.transcribe_timeout_s):
                result = await self._transcribe(audio.pcm16k(), prompt=self._settings.prompt)
        except (TimeoutError, VoicemeshError) as exc:
            log.info("session %s: speech over the answer unheard: %s", self._state.id, exc)
            return None
        except Exception:  # a bug must not leave the answer paused: taken as an interruption
            log.exception("session %s: transcribing speech over the answer failed", self._state.id)
            return None
        if result.transcript is not None:
            return result.transcript.text
        if result.degraded is not None and result.degraded.transcript:
            return result.degraded.transcript
        return None


__all__ = ["BackchannelGate"]
