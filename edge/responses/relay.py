"""A router's events for one response, turned into what the client sees: transcript deltas, audio
clauses for the player, vendor events on routing/queueing/failover, and ``response.metadata``.

The transcript is what the user hears: a region's text is held back until the audio of its clause
arrives (``HeldText``), so when a region dies mid-answer its unheard text is dropped and the
transcript goes on with what the next region (or the edge's own voice) says. A text-only response
(``frames.output_audio`` false) has no audio to wait for: each delta goes out as it comes, and a
failover continues after what was shown.

A function call (``tool_calls``, whole) goes out at once as a ``function_call`` item with an id the
edge gives it (``edge/responses/response_tools.py``), and joins the conversation through ``on_call``. The
router passes a turn's calls once; should a second batch reach the same response all the same, it
is dropped: a response's calls are the first ones the client saw.

The router has classified every failure already, and the relay acts on its typed outcome:
``ClientRefused`` is answered with an ``error`` event (the response then fails), ``Degraded`` by the
fallback voice. A router that raises instead is treated the same way by the error's class.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from edge.responses.fallback_reply import FallbackReply
from edge.responses.playback import Clause, Player
from edge.responses.response_frames import ResponseFrames
from edge.responses.response_tools import new_call_id
from edge.shared.events import VENDOR_FAILED_OVER, VENDOR_QUEUED, VENDOR_ROUTED, error_event, new_id
from router.api import ClientRefused, Degraded, FailedOver, Routed, RoutedEvent
from router.continuation import voiced_end
from wire.client import ClauseAudio
from wire.errors import InvalidToolCall, ProtocolError, VoicemeshError
from wire.turn import (
    TextDelta,
    TokenUsage,
    ToolCall,
    ToolCalls,
    Transcript,
    TurnAdmitted,
    TurnDone,
    TurnQueued,
)

log = logging.getLogger(__name__)

OnCall = Callable[[str, ToolCall], Awaitable[str | None]]
"""Adds a response's function call (item id, the call with the client's ``call_id``) to the
conversation; returns its ``previous_item_id``."""


@dataclass
class HeldText:
    """A region's reply text not yet voiced: released clause by clause as their audio arrives."""

    pending: str = ""

    def add(self, delta: str) -> None:
        self.pending += delta

    def voiced(self, clause: str) -> str:
        """The text up to the end of ``clause`` (whose audio just arrived)."""
        end = voiced_end(self.pending, clause)
        released, self.pending = self.pending[:end], self.pending[end:]
        return released

    def take(self) -> str:
        """Everything held (the region completed the turn: its text is the answer)."""
        released, self.pending = self.pending, ""
        return released


@dataclass
class RouterRelay:
    events: AsyncIterator[RoutedEvent]
    frames: ResponseFrames
    player: Player
    fallback: FallbackReply
    on_transcript: Callable[[str], Awaitable[None]] | None = None
    """Called once, with the region's transcript of the user's audio (audio turns only)."""
    on_call: OnCall | None = None
    text: list[str] = field(default_factory=list)
    """The reply text so far (transcript deltas sent)."""
    transcript: str | None = None
    usage: TokenUsage | None = None
    """The LLM's token count from the region that finished the turn (``TurnDone.usage``)."""
    refused: ClientRefused | None = None
    """Set when the request was refused as the client's error: the response fails."""
    held: HeldText = field(default_factory=HeldText)
    voiced: bool = False
    """Some region audio of this response reached the player (text, for a text-only response)."""
    arrival: Callable[[], float] = time.perf_counter
    """When the event just read reached the edge: now, or when a turn started early read it
    (``edge/realtime/speculation.py``)."""

    async def run(self) -> None:
        """Relay until the router's stream ends; then tell the player no more audio is coming."""
        try:
            async for ev in self.events:
                if not await self._relay(ev, self.arrival()):
                    break
        except ProtocolError as exc:  # a router that raises instead of yielding its outcome
            await self._refuse(ClientRefused.of(exc))
        except VoicemeshError as exc:
            await self._degrade(Degraded(reason=exc.code))
        finally:
            self.player.put(None)

    async def _relay(self, ev: RoutedEvent, received: float) -> bool:
        """Handle one event; ``False`` when the turn is over."""
        metadata = self.frames.metadata
        stages = self.frames.stages
        if isinstance(ev, ClauseAudio):
            stages.region_output(received)
            self.voiced = True
            await self._say(self.held.voiced(ev.clause.text))
            self.player.put(Clause(ev.clause.text, ev.pcm, received))
        elif isinstance(ev, TextDelta):
            if self.frames.output_audio:
                self.held.add(ev.delta)
            else:  # shown as it comes: the router counts it as heard
                stages.region_output(received)
                self.voiced = True
                self.text.append(ev.delta)
                await self.frames.text_delta(ev.delta)
        elif isinstance(ev, Transcript):
            await self._transcribed(ev.text)
        elif isinstance(ev, ToolCalls):
            await self._called(ev)
        elif isinstance(ev, Routed):
            stages.routed(received)
            metadata["voicemesh_region"] = ev.region  # the registry's name for it
            await self.frames.vendor(VENDOR_ROUTED, region=ev.region, attempt=ev.attempt)
        elif isinstance(ev, TurnAdmitted):
            stages.admitted(received, ev.queued_s)
            metadata.setdefault("voicemesh_region", ev.region)
        elif isinstance(ev, FailedOver):
            self.held.take()  # the failed region's unheard text: the next one continues after the heard
            metadata["voicemesh_failed_over_from"] = ev.from_region
            metadata["voicemesh_region"] = ev.to_region
            await self.frames.vendor(
                VENDOR_FAILED_OVER, from_region=ev.from_region, to_region=ev.to_region, reason=ev.reason
            )
        elif isinstance(ev, TurnQueued):
            await self.frames.vendor(
                VENDOR_QUEUED, position=ev.position, estimated_wait_s=ev.estimated_wait_s
            )
        elif isinstance(ev, Degraded):
            await self._degrade(ev)
            return False
        elif isinstance(ev, ClientRefused):
            await self._refuse(ev)
            return False
        elif isinstance(ev, TurnDone):
            metadata.setdefault("voicemesh_region", ev.region)
            self.usage = ev.usage
            stages.region_done(ev.timings)
            if ev.status == "failed":  # the router fails over on these; should one slip through
                await self._degrade(Degraded(reason=ev.error or "region_failed"))
            else:
                await self._say(self.held.take())
            return False
        return True

    async def _say(self, text: str) -> None:
        """Add ``text`` to the transcript (spaced from what came before when neither side is)."""
        if not text:
            return
        if self.text and not self.text[-1][-1:].isspace() and not text[:1].isspace():
            text = " " + text
        self.text.append(text)
        await self.frames.text_delta(text)

    async def _called(self, ev: ToolCalls) -> None:
        if self.frames.calls:
            log.warning("response %s: a second batch of function calls dropped", self.frames.id)
            return
        for made in ev.calls:
            item_id = new_id("item")
            call = ToolCall(id=new_call_id(), name=made.name, arguments=made.arguments)  # the edge's id
            previous = await self.on_call(item_id, call) if self.on_call is not None else None
            await self.frames.function_call(item_id, call.id, call.name, call.arguments, previous)

    async def _transcribed(self, text: str) -> None:
        if self.transcript is not None or self.on_transcript is None:  # typed turns have none
            return
        self.transcript = text
        await self.on_transcript(text)

    async def _degrade(self, ev: Degraded) -> None:
        self.frames.stages.degraded(time.perf_counter())
        if ev.transcript:
            await self._transcribed(ev.transcript)
        self.held.take()  # ``ev.unvoiced_text`` is the same text, now spoken by the edge
        await self.fallback.speak(
            ev,
            self.frames.metadata,
            self._say,
            self.player.put if self.frames.output_audio else None,
            voiced=self.voiced,
        )

    async def _refuse(self, ev: ClientRefused) -> None:
        self.refused = ev
        self.held.take()
        if ev.code == InvalidToolCall.code:
            return  # the model's output, not a client event, was at fault: ``response.done`` says why
        await self.frames.send(error_event(ev.error(), param=ev.param, error_type=ev.error_type))
