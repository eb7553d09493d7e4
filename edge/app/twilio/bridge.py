"""The session's Realtime events, turned into what Twilio plays: the answer's mu-law in 20 ms
``media`` messages, a ``mark`` at the end of each clause and of each answer, and ``clear`` when the
caller talks over it. Every other event stays here (Twilio would refuse it); errors are logged.

Twilio echoes a mark once the audio before it has been played. So the bridge knows what the caller
heard, not only what was sent: on a barge-in it clears Twilio's buffer and hands the session a
``conversation.item.truncate`` at the last mark played, so the history holds what was heard.
"""

from __future__ import annotations

import base64
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from edge.app.twilio import messages
from edge.app.twilio.call_setup import SETUP_EVENT_ID
from edge.app.twilio.messages import FRAME_BYTES, RATE, SILENCE

log = logging.getLogger("voicemesh.edge.twilio")

SendTwilio = Callable[[str], Awaitable[None]]


class TwilioBridge:
    def __init__(self, stream_sid: str, send: SendTwilio) -> None:
        self.stream_sid = stream_sid
        self._send = send
        self._carry = b""
        """The answer's audio short of a whole 20 ms frame, sent with the next delta."""
        self._item: str | None = None
        self._sent = 0
        """Bytes (= 1/8 ms) of ``_item``'s audio sent to Twilio."""
        self._pending: deque[tuple[str, str, int]] = deque()
        """Marks sent and not yet echoed: ``(name, item_id, ms)``, in order."""
        self._responding = False
        self.heard: tuple[str, int] | None = None
        """``(item_id, ms)``: the furthest audio Twilio said it played."""
        self.truncate: str | None = None
        """A ``conversation.item.truncate`` for the session, after a barge-in (``take_truncate``)."""
        self.refused: str | None = None
        """The code of an ``error`` answering the call's set-up ``session.update``: the call ends."""
        self.marks_sent = 0
        self.clears_sent = 0

    @property
    def playing(self) -> bool:
        """An answer is coming, or Twilio has audio of one it has not played yet."""
        return self._responding or bool(self._pending) or bool(self._carry)

    async def relay(self, text: str) -> None:
        """The session's ``send``: one Realtime server event."""
        event = json.loads(text)
        type_ = event.get("type")
        if type_ == "response.output_audio.delta":
            await self._audio(event["item_id"], base64.b64decode(event["delta"]))
        elif type_ == "response.output_audio_transcript.delta":
            await self._mark("clause")  # (sent once the clause's audio was sent whole)
        elif type_ == "response.created":
            self._responding = True
        elif type_ == "response.done":
            self._responding = False
            await self._flush()
            await self._mark("done")
        elif type_ == "input_audio_buffer.speech_started" and self.playing:
            await self._clear()
        elif type_ == "error":
            error = event.get("error") or {}
            if error.get("event_id") == SETUP_EVENT_ID:
                self.refused = str(error.get("code") or "bad_session_update")
            log.warning("stream %s: %s: %s", self.stream_sid, error.get("code"), error.get("message"))

    def played(self, name: str) -> None:
        """Twilio echoed ``name``: the audio before it was played (names of cleared marks are unknown)."""
        while self._pending:
            sent, item, ms = self._pending.popleft()
            self.heard = (item, ms)
            if sent == name:
                return

    def take_truncate(self) -> str | None:
        truncate, self.truncate = self.truncate, None
        return truncate

    async def _audio(self, item: str, mulaw: bytes) -> None:
        if item != self._item:
            await self._flush()
            self._item, self._sent = item, 0
        data = self._carry + mulaw
        whole = len(data) - len(data) % FRAME_BYTES
        self._carry = data[whole:]
        for off in range(0, whole, FRAME_BYTES):
            await self._frame(data[off : off + FRAME_BYTES])

    async def _flush(self) -> None:
        if self._carry:
            frame, self._carry = self._carry, b""
            await self._frame(frame.ljust(FRAME_BYTES, SILENCE), len(frame))

    async def _frame(self, frame: bytes, audio_bytes: int = FRAME_BYTES) -> None:
        self._sent += audio_bytes  # (the answer's own audio: a truncate must not pass its end)
        await self._send(messages.media(self.stream_sid, base64.b64encode(frame).decode()))

    async def _mark(self, kind: str) -> None:
        if self._item is None:
            return
        if kind == "clause" and self._pending and self._pending[-1][1:] == (self._item, self._ms):
            return  # nothing sent since the last mark (an answer's end is marked all the same)
        self.marks_sent += 1
        name = f"{kind}:{self._item}:{self._ms}:{self.marks_sent}"
        self._pending.append((name, self._item, self._ms))
        await self._send(messages.mark(self.stream_sid, name))

    @property
    def _ms(self) -> int:
        return self._sent * 1000 // RATE

    async def _clear(self) -> None:
        """Barge-in: Twilio drops what it has not played, and the history keeps what was heard."""
        self._carry = b""
        unplayed = [(item, ms) for _, item, ms in self._pending]
        self._pending.clear()
        self.clears_sent += 1
        await self._send(messages.clear(self.stream_sid))
        if self._item is not None and unplayed:
            heard = self.heard[1] if self.heard is not None and self.heard[0] == self._item else 0
            if heard < self._ms:
                event = {"type": "conversation.item.truncate", "item_id": self._item, "content_index": 0,
                         "audio_end_ms": heard}  # fmt: skip
                self.truncate = json.dumps(event)


__all__ = ["TwilioBridge"]
