"""One assistant response: a router relay and a player run together until the router's stream and
the audio are done, or ``cancel()`` stops both at once (barge-in or ``response.cancel``).

Cancelling closes the router stream, which cancels the region's turn. The response's text for
history is what was heard (its ``Heard`` record, ``edge/turns/heard.py``): every transcript delta
the client got, which is everything when it completed, the fully sent clauses otherwise.

Every response ends with ``response.done``: ``completed``, ``cancelled``, or ``failed`` with its
``status_details.error`` (the client's error when the request was refused, ``server_error`` when
something in the edge raised); only a closing session skips it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from edge.audio.audio_formats import FORMATS
from edge.responses.params import ResponseParams
from edge.responses.playback import Player
from edge.responses.relay import OnCall, RouterRelay
from edge.responses.response_frames import ResponseFrames, Status, response_usage
from edge.shared.events import Send
from edge.shared.protocols import FallbackSpeaker
from edge.tenancy.audit import TurnTrail
from edge.turns.edge_voice import EdgeVoice
from edge.turns.heard import Heard
from edge.turns.reader import Refuse, TurnReader
from router.api import RoutedEvent
from wire.tasks import cancel_and_wait

log = logging.getLogger(__name__)

CancelReason = Literal["turn_detected", "client_cancelled"]


@dataclass
class ResponseResult:
    status: Status
    heard_text: str
    full_text: str
    transcript: str | None
    metadata: dict[str, str]
    calls: int = 0
    """Function calls the client was given."""
    usage: dict[str, Any] = field(default_factory=dict)
    """``response.usage`` as the client got it."""


@dataclass
class Response:
    """Runs one response; ``cancel()`` stops it at once (barge-in or ``response.cancel``)."""

    send: Send
    events: AsyncIterator[RoutedEvent]
    fallback: FallbackSpeaker
    hold_message: str
    user_item_id: str | None
    voice: str
    lead_s: float = 0.4
    relay_times: list[float] | None = None
    """When a list, the edge's own time per relayed audio chunk (router yield -> socket) is appended."""
    output_format: str = "audio/pcm"
    """The session's ``audio.output.format`` type (``edge/audio/audio_formats.py``)."""
    on_transcript: Callable[[str], Awaitable[None]] | None = None
    on_call: OnCall | None = None
    """Adds each function call to the conversation (``None``: out of band)."""
    params: ResponseParams | None = None
    """What ``response.create`` asked for (metadata, out of band, max tokens), for its events."""
    prompt: tuple[str, ...] = ()
    """The text the region was given (instructions, history, the user's words), for ``usage``."""
    arrival: Callable[[], float] = time.perf_counter
    """When the event just read from ``events`` reached the edge (``TurnReader.received``)."""
    trail: TurnTrail | None = None
    """The turn's audit trail, kept by its reader."""
    refuse: Refuse | None = None
    """The key's ``on_no_region: error`` policy (``TurnReader``)."""
    turn_id: str = ""
    _cancel_reason: CancelReason | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.frames = ResponseFrames(self.send, self.user_item_id, self.voice)
        self.frames.output_format = FORMATS[self.output_format].describe()
        if (params := self.params) is not None:
            self.frames.client_metadata = params.metadata
            self.frames.in_conversation = not params.out_of_band
            self.frames.max_output_tokens = params.max_output_tokens
            self.frames.output_audio = params.output_audio
        self.player = Player(self.frames, self.lead_s, self.relay_times, FORMATS[self.output_format])
        reader = TurnReader(
            self.events, heard=self.player.heard, trail=self.trail, refuse=self.refuse,
            turn_id=self.turn_id, arrival=self.arrival,
        )  # fmt: skip
        voice = EdgeVoice(self.fallback, self.hold_message)
        self.relay = RouterRelay(
            reader, self.frames, self.player, voice, self.on_transcript, on_call=self.on_call
        )

    @property
    def id(self) -> str:
        return self.frames.id

    @property
    def heard(self) -> Heard:
        """What the client heard of it so far."""
        return self.player.heard

    @property
    def metadata(self) -> dict[str, str]:
        return self.frames.metadata

    def cancel(self, reason: CancelReason) -> None:
        if self._cancel_reason is None:
            self._cancel_reason = reason
            for task in self._tasks:
                task.cancel()

    @property
    def cancelling(self) -> bool:
        return self._cancel_reason is not None

    @property
    def cancel_reason(self) -> CancelReason | None:
        return self._cancel_reason

    async def run(self) -> ResponseResult:
        """Play the response out and close it with ``response.done``, whatever happened on the way
        (unless the session itself is closing)."""
        status: Status = "completed"
        error: dict[str, str] | None = None
        try:
            await self.frames.started()
            status = await self._play_out()
        except Exception as exc:  # a bug in the relay, the player or the router: still end it
            log.exception("response %s failed", self.id)
            status = "failed"
            error = {"type": "server_error", "code": "internal_error", "message": type(exc).__name__}
        if (refused := self.relay.refused) is not None and status != "cancelled":
            status = "failed"
            error = {"type": refused.error_type, "code": refused.code, "message": refused.message}
        full_text = "".join(self.relay.text).strip()
        heard_text = self.heard.heard_text  # every transcript delta sent: all of it, unless cut short
        usage = response_usage([*self.prompt, self.relay.transcript or ""], full_text, self.relay.usage)
        await self.frames.finished(status, heard_text, self._cancel_reason, error, usage)
        return ResponseResult(
            status=status,
            heard_text=heard_text,
            full_text=full_text,
            transcript=self.relay.transcript,
            metadata=self.metadata,
            calls=len(self.frames.calls),
            usage=usage,
        )

    async def _play_out(self) -> Status:
        """Run the relay and the player to their end; ``cancelled`` when ``cancel()`` stopped them."""
        relay = asyncio.create_task(self.relay.run(), name=f"{self.id}-router")
        play = asyncio.create_task(self.player.play(), name=f"{self.id}-player")
        self._tasks = [relay, play]
        if self._cancel_reason is not None:  # cancelled before it began
            relay.cancel()
            play.cancel()
        try:
            await relay
            await play
        except asyncio.CancelledError:
            if self._cancel_reason is None:
                raise  # the session itself is closing
            return "cancelled"
        finally:
            await cancel_and_wait(*self._tasks, ignore=(Exception,))
            with contextlib.suppress(Exception):
                await self.events.aclose()  # type: ignore[attr-defined]
        return "completed"
