"""One session's user turns from its input audio: server VAD's speech started/stopped, and commits
(automatic at the end of speech, or the client's ``input_audio_buffer.commit``). A pause in the
speech (``pause_ms``, shorter than the silence window) is offered to ``on_pause`` with the audio a
stop there would commit, and speech coming back to ``on_resume``: nothing is sent to the client
for either (``edge/realtime/speculation.py``). Under ``semantic_vad`` a turn model is asked at the
pause whether the turn ends there (``edge/realtime/semantic_turns.py``).

A committed buffer becomes a user item in the conversation. What a turn starts or stops is the
session's business: ``on_speech_started`` (barge-in?) and ``on_turn_end`` (respond?) tell it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol

from edge.audio.audio_formats import FORMATS, PCM
from edge.audio.input_audio import InputAudio
from edge.audio.turn_audio import TurnAudio
from edge.audio.turn_detector import (
    SpeechPaused,
    SpeechResumed,
    SpeechStarted,
    SpeechStopped,
    TurnDetector,
    TurnEvent,
)
from edge.realtime.conversation import Conversation
from edge.realtime.semantic_turns import SemanticTurns
from edge.shared.events import Send, new_id, server_event
from edge.shared.protocols import SpeechProbability, TurnModel
from edge.shared.state import TurnDetection, heard_as
from wire.errors import BadAudio
from wire.tasks import cancel_and_wait

MIN_COMMIT_MS = 100
TAIL_MS = 160
"""Silence kept after the end of speech in a committed turn: VAD calls the end at the last voiced
chunk, and Whisper hears a final word better with a little quiet after it (Pipecat's segments
end with theirs). No more than the shortest pause the edge acts on, so a turn started at a pause
has the same audio as the turn then called (``edge/realtime/speculation.py``)."""


class SpeechGate(Protocol):
    """Holds speech that starts over an answer until it is known to be a turn
    (``edge/realtime/backchannel.py``)."""

    def hold(self, started: str, audio_start_ms: int) -> bool:
        """Speech started (``started``: its ``speech_started`` event): ``True`` when held, the gate
        then sends the event (and makes the barge-in) if it turns out to be an interruption."""

    async def release(self, audio: TurnAudio) -> bool:
        """Held speech stopped, with its ``audio``: ``True`` to drop it (nothing is sent), ``False`` to
        go on with the turn (its ``speech_started`` was sent)."""

    async def committed(self, item_id: str, audio: TurnAudio) -> None:
        """The speech last released became ``item_id``."""

    def abandon(self) -> None:
        """Turn detection went off while speech was held: no end will be heard, the answer goes on."""


async def _as_is(work: Awaitable[None]) -> None:
    """Speech events run as they are (a session wraps them: failures become ``error`` events)."""
    await work


class InputTurns:
    def __init__(
        self,
        vad: SpeechProbability,
        detection: TurnDetection | None,
        conversation: Conversation,
        send: Send,
        *,
        max_buffer_s: float,
        on_speech_started: Callable[[], None],
        on_turn_end: Callable[[], Awaitable[None]],
        on_pause: Callable[[TurnAudio], None] | None = None,
        on_resume: Callable[[], None] | None = None,
        run_events: Callable[[Awaitable[None]], Coroutine[Any, Any, None]] = _as_is,
        pause_ms: int = 0,
        audio_format: str = PCM,
        turn_model: TurnModel | None = None,
        semantic_pause_ms: int = 192,
        words: Callable[[], Awaitable[float | None]] | None = None,
    ) -> None:
        self._pause_ms = pause_ms if on_pause is not None else 0
        self.audio = InputAudio(vad, None, max_buffer_s=max_buffer_s, audio_format=FORMATS[audio_format])
        self.semantic = SemanticTurns(turn_model, self.audio, pause_ms=semantic_pause_ms, words=words)
        self._detection: TurnDetection | None = None
        self.configure(detection)
        self.audio.on_events = self._events_came
        self._run_events = run_events
        self._events_task: asyncio.Task[None] | None = None
        self._conversation = conversation
        self._send = send
        self._on_speech_started = on_speech_started
        self._on_turn_end = on_turn_end
        self._on_pause = on_pause
        self._on_resume = on_resume
        self._speech_item: str | None = None
        self._speech_start_ms = 0
        self.gate: SpeechGate | None = None
        """Speech over an answer waits here before it is a turn (``None``: a barge-in at once)."""
        self._held = False
        """The speech in progress is the gate's."""
        self.stopped_at: float | None = None
        """When server VAD last called the end of speech (perf_counter): a response's stages start
        there (``edge/responses/stages.py``)."""

    def configure(self, detection: TurnDetection | None, audio_format: str | None = None) -> None:
        """The session's settings changed: its turn detection (``None``: turns are committed by the
        client) and its input audio format (``None``: unchanged)."""
        if audio_format is not None:
            self.audio.audio_format = FORMATS[audio_format]
        self._detection = detection
        # semantic_vad: the VAD listens for its eagerness timeout and pauses where the model is asked
        pause_ms = self.semantic.pause_ms if self.semantic.on(detection) else self._pause_ms
        if detection is None:
            self.audio.detector = None
            if self._held and self.gate is not None:
                self._held = False
                self.gate.abandon()
        elif self.audio.detector is None:
            self.audio.detector = TurnDetector(heard_as(detection), pause_ms=pause_ms)
        else:
            self.audio.detector.config = heard_as(detection)
            self.audio.detector.pause_ms = pause_ms

    async def append(self, b64: str) -> None:
        """``input_audio_buffer.append``: base64 audio in the session's input format."""
        try:
            data = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BadAudio(f"audio is not valid base64: {exc}") from exc
        await self.append_audio(data)

    async def append_audio(self, data: bytes) -> None:
        """The same, its base64 already decoded, and what its audio started or stopped handled
        before this returns (tests, benches: a session ``feed``s)."""
        self.feed(data)
        await self.settled()

    def feed(self, data: bytes) -> None:
        """Decoded audio into the buffer (``edge.shared.events.read_append``: the fast path). It returns
        at once: the VAD hears the audio after, and the speech events run on a task of their own
        (``_handle_events``), one after another, in the order the audio came."""
        self.audio.append(data)

    async def settled(self) -> None:
        """Once the VAD has heard all the audio so far and what it started or stopped is handled:
        any client event but an append waits for this, so it comes after that audio as it was
        sent (a commit takes the turn the audio before it ended)."""
        while True:
            await self.audio.caught_up()
            task = self._events_task
            if task is None or task.done():
                return
            await asyncio.wait({task})

    def _events_came(self) -> None:
        if self._events_task is None or self._events_task.done():
            self._events_task = asyncio.get_running_loop().create_task(
                self._run_events(self._handle_events()), name="speech-events"
            )

    async def _handle_events(self) -> None:
        events = self.audio.events
        while events or self.audio.vad_error is not None:
            if self.audio.vad_error is not None:
                exc, self.audio.vad_error = self.audio.vad_error, None
                raise exc
            try:
                await self._handle(events[0])
            finally:
                events.popleft()  # (the buffer is not trimmed until the turn stopped is taken)

    async def _handle(self, ev: TurnEvent) -> None:
        if isinstance(ev, SpeechStarted):
            await self._speech_started(ev)
        elif isinstance(ev, SpeechStopped):
            await self._speech_stopped(ev)
        elif isinstance(ev, SpeechPaused):
            if self._on_pause is not None:
                self._on_pause(self.audio.peek(self._speech_start_ms, self._tail(ev.audio_end_ms)))
            if self.audio.held:  # semantic_vad: is the turn complete here?
                await self.semantic.judge(self.audio.so_far(self._speech_start_ms))
        elif isinstance(ev, SpeechResumed) and self._on_resume is not None:
            self._on_resume()

    async def close(self) -> None:
        """The session ended: no more speech events (those left are dropped)."""
        self.audio.closed = True
        await cancel_and_wait(self._events_task)

    async def commit(self) -> None:
        """``input_audio_buffer.commit``."""
        if self.audio.buffered_ms < MIN_COMMIT_MS:
            raise BadAudio(
                f"buffer too small: need {MIN_COMMIT_MS} ms of audio or more, have {self.audio.buffered_ms}",
                code="input_audio_buffer_commit_empty",
            )
        await self._commit(new_id("item"), self.audio.take())

    async def clear(self) -> None:
        """``input_audio_buffer.clear``."""
        self.audio.clear()
        await self._send(server_event("input_audio_buffer.cleared"))

    async def _speech_started(self, ev: SpeechStarted) -> None:
        self._speech_item = new_id("item")
        started = server_event(
            "input_audio_buffer.speech_started", audio_start_ms=ev.audio_start_ms, item_id=self._speech_item
        )
        self._speech_start_ms = ev.audio_start_ms
        self._held = self.gate is not None and self.gate.hold(started, ev.audio_start_ms)
        if self._held:
            return  # over an answer: sent (and the barge-in made) once it is an interruption
        await self._send(started)
        self._on_speech_started()

    async def _speech_stopped(self, ev: SpeechStopped) -> None:
        self.stopped_at = time.perf_counter()
        audio = self.audio.take(self._speech_start_ms, self._tail(ev.audio_end_ms))
        held, self._held = self._held, False
        if held and self.gate is not None and await self.gate.release(audio):
            self._speech_item = None  # a backchannel: the answer goes on, nothing was sent for it
            return
        item_id = self._speech_item or new_id("item")
        self._speech_item = None
        await self._send(
            server_event("input_audio_buffer.speech_stopped", audio_end_ms=ev.audio_end_ms, item_id=item_id)
        )
        await self._commit(item_id, audio)
        self.semantic.stopped(self._detection)
        if held and self.gate is not None:
            await self.gate.committed(item_id, audio)
        await self._on_turn_end()

    def _tail(self, audio_end_ms: int) -> int:
        """Where a turn's audio ends: ``TAIL_MS`` after the speech, within the silence VAD heard."""
        detector = self.audio.detector
        heard = detector.config.silence_duration_ms if detector is not None else 0
        return audio_end_ms + min(TAIL_MS, heard, self._pause_ms or TAIL_MS)

    async def _commit(self, item_id: str, audio: TurnAudio) -> None:
        previous = self._conversation.last_item_id
        await self._send(
            server_event("input_audio_buffer.committed", item_id=item_id, previous_item_id=previous)
        )
        await self._conversation.add_user_audio(item_id, audio)
