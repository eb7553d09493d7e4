"""A call's events: the session's server events onto the ``oai-events`` data channel, its answer's
audio onto the outbound track, as OpenAI's WebRTC does.

OpenAI sends no ``response.output_audio.delta`` over WebRTC: the audio is the track, and the data
channel says what the track does: ``output_audio_buffer.started`` (a response's first audio is
queued), ``stopped`` (its last was played), ``cleared`` (dropped: the client's
``output_audio_buffer.clear``, or the caller speaking over it, a barge-in).
"""

from __future__ import annotations

import base64
import contextlib
import json
from typing import Any

from edge.app.webrtc.tracks import OutboundAudio
from edge.shared.events import server_event
from edge.shared.state import SessionState

MAX_QUEUED_EVENTS = 2000
"""Server events held until the data channel opens (bounded: the call's connect time is too)."""


class EventBridge:
    """The session's ``send``: each server event to the data channel or, audio, to the track."""

    def __init__(self, state: SessionState) -> None:
        self._state = state
        self.track = OutboundAudio(self._drained)
        self._channel: Any = None
        self._queued: list[str] = []
        self._started: str | None = None
        """The response whose audio the track plays (``output_audio_buffer.started`` was sent)."""
        self._dropped: str | None = None
        """The response whose audio was cleared: a delta of it still in flight is not played."""

    def attach(self, channel: Any) -> None:
        """The client's ``oai-events`` channel opened: what the session sent so far goes first."""
        self._channel = channel
        queued, self._queued = self._queued, []
        for text in queued:
            self._emit(text)

    def queued_error(self) -> str | None:
        """The message of an ``error`` event held for the channel (a refused offer's session config)."""
        for text in self._queued:
            event = json.loads(text)
            if event.get("type") == "error":
                return str(event.get("error", {}).get("message", "refused"))
        return None

    async def send(self, text: str) -> None:
        event: dict[str, Any] = json.loads(text)
        type_ = event.get("type")
        if type_ == "response.output_audio.delta":
            self._audio(event)
            return
        if type_ == "output_audio_buffer.cleared":  # the client's clear: the session stopped the response
            self.track.clear()
            self._started, self._dropped = None, event.get("response_id")
        elif type_ == "input_audio_buffer.speech_started":
            self._emit(text)
            self._barge_in()
            return
        elif type_ == "response.done":
            response_id = event.get("response", {}).get("id")
            if isinstance(response_id, str) and self._started == response_id:
                self.track.end(response_id)
        self._emit(text)

    def _audio(self, event: dict[str, Any]) -> None:
        """PCM16 at 24 kHz: a WebRTC session's output format (``edge/app/webrtc/call.py`` sets it)."""
        response_id = event.get("response_id")
        if response_id == self._dropped:
            return
        if isinstance(response_id, str) and self._started != response_id:
            self._started = response_id
            self._emit(server_event("output_audio_buffer.started", response_id=response_id))
        self.track.push(base64.b64decode(event.get("delta", "")))

    def _barge_in(self) -> None:
        """Speech over the answer: the session cancels it (``interrupt_response``), the track drops
        what it still holds at once."""
        td = self._state.turn_detection
        if td is None or not td.interrupt_response or self._started is None:
            return
        response_id, self._started = self._started, None
        self._dropped = response_id
        self.track.clear()
        # Said even when the track had nothing left (it played out while the edge held the speech to
        # tell a backchannel, ``edge/realtime/backchannel.py``): a started buffer ends stopped or cleared.
        self._emit(server_event("output_audio_buffer.cleared", response_id=response_id))

    def _drained(self, response_id: str) -> None:
        if self._started == response_id:
            self._started = None
        with contextlib.suppress(ConnectionError):  # (called by the track's sender: the call ends anyway)
            self._emit(server_event("output_audio_buffer.stopped", response_id=response_id))

    def _emit(self, text: str) -> None:
        channel = self._channel
        if channel is None:
            if len(self._queued) >= MAX_QUEUED_EVENTS:
                raise ConnectionError("the data channel never opened")
            self._queued.append(text)
            return
        if channel.readyState != "open":
            raise ConnectionError("the data channel is closed")
        channel.send(text)


__all__ = ["EventBridge"]
