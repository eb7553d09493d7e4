"""A router's events for one response, turned into what the client sees: transcript deltas, audio
clauses for the player, vendor events on routing/queueing/failover, and ``response.metadata``.

The router's stream is read by the edge's one reader (``edge/turns/reader.py``); this is its
Realtime user. The transcript is what the user hears: a region's text waits in the ``Heard`` record
until the audio of its clause arrives, then goes to the player with that audio, which sends the
clause's transcript delta once it has sent the clause's audio (``edge/responses/playback.py``). So
when a region dies mid-answer its unheard text is dropped, and after a barge-in the transcript the
client got is the history's text. A text-only response (``frames.output_audio`` false) has no audio
to wait for: each delta goes out as it comes, and a failover continues after what was shown.

A function call (``tool_calls``, whole) goes out as a ``function_call`` item after the audio of the
words before it (at once, in a text-only response), with an id the edge gives it
(``edge/responses/response_tools.py``), and joins the conversation through ``on_call``. The router
passes a turn's calls once; should a second batch reach the same response all the same, it is
dropped: a response's calls are the first ones the client saw.

The router has classified every failure already, and the relay acts on its typed outcome:
``ClientRefused`` is answered with an ``error`` event (the response then fails), ``Degraded`` by the
edge's own voice (``edge/turns/edge_voice.py``). A router that raises instead is treated the same way
by the error's class.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from edge.responses.playback import Clause, Player
from edge.responses.response_frames import ResponseFrames
from edge.responses.response_tools import new_call_id
from edge.shared.events import VENDOR_FAILED_OVER, VENDOR_QUEUED, VENDOR_ROUTED, error_event, new_id
from edge.turns.edge_voice import EdgeVoice
from edge.turns.heard import Heard, spaced
from edge.turns.reader import TurnHandler, TurnReader
from router.api import ClientRefused, Degraded, FailedOver, Routed
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
class RouterRelay(TurnHandler):
    reader: TurnReader
    frames: ResponseFrames
    player: Player
    voice: EdgeVoice
    on_transcript: Callable[[str], Awaitable[None]] | None = None
    """Called once, with the region's transcript of the user's audio (audio turns only)."""
    on_call: OnCall | None = None
    text: list[str] = field(default_factory=list)
    """The reply text released so far: to the player with its audio, or shown (text only)."""
    transcript: str | None = None
    usage: TokenUsage | None = None
    """The LLM's token count from the region that finished the turn (``TurnDone.usage``)."""
    refused: ClientRefused | None = None
    """Set when the request was refused as the client's error: the response fails."""
    voiced: bool = False
    """Some region audio of this response reached the player (text, for a text-only response)."""
    _called: bool = False

    @property
    def heard(self) -> Heard:
        return self.reader.heard

    async def run(self) -> None:
        """Relay until the router's stream ends; then tell the player no more audio is coming."""
        try:
            await self.reader.run(self)
        except ProtocolError as exc:  # a router that raises instead of yielding its outcome
            await self.got_refused(ClientRefused.of(exc))
        except VoicemeshError as exc:
            await self.got_degraded(Degraded(reason=exc.code))
        finally:
            self.player.put(None)

    async def got_clause(self, ev: ClauseAudio, piece: str) -> None:
        self.frames.stages.region_output(self.reader.received)
        self.voiced = True
        await self._release(piece, ev.pcm, self.reader.received)

    async def got_text(self, ev: TextDelta) -> None:
        if self.frames.output_audio:
            return  # held in ``heard`` until its clause's audio comes
        self.frames.stages.region_output(
            self.reader.received
        )  # shown as it comes: the router counts it as heard
        self.voiced = True
        await self._release(self.heard.take_pending(), space=False)

    async def got_transcript(self, ev: Transcript) -> None:
        await self._transcribed(ev.text)

    async def got_calls(self, ev: ToolCalls) -> None:
        if self._called:
            log.warning("response %s: a second batch of function calls dropped", self.frames.id)
            return
        self._called = True
        if self.frames.output_audio:  # after the audio of the words before them
            self.player.put(lambda: self._send_calls(ev))
        else:
            await self._send_calls(ev)

    async def _send_calls(self, ev: ToolCalls) -> None:
        for made in ev.calls:
            item_id = new_id("item")
            call = ToolCall(id=new_call_id(), name=made.name, arguments=made.arguments)  # the edge's id
            previous = await self.on_call(item_id, call) if self.on_call is not None else None
            await self.frames.function_call(item_id, call.id, call.name, call.arguments, previous)

    async def got_routed(self, ev: Routed) -> None:
        self.frames.stages.routed(self.reader.received)
        self.frames.metadata["voicemesh_region"] = ev.region  # the registry's name for it
        await self.frames.vendor(VENDOR_ROUTED, region=ev.region, attempt=ev.attempt)

    async def got_admitted(self, ev: TurnAdmitted) -> None:
        self.frames.stages.admitted(self.reader.received, ev.queued_s)
        self.frames.metadata.setdefault("voicemesh_region", ev.region)

    async def got_failover(self, ev: FailedOver) -> None:
        self.frames.stages.failed_over(ev.from_region, ev.to_region, ev.reason, self.reader.received)
        metadata = self.frames.metadata
        metadata["voicemesh_failed_over_from"] = ev.from_region
        metadata["voicemesh_region"] = ev.to_region
        await self.frames.vendor(
            VENDOR_FAILED_OVER, from_region=ev.from_region, to_region=ev.to_region, reason=ev.reason
        )

    async def got_queued(self, ev: TurnQueued) -> None:
        await self.frames.vendor(VENDOR_QUEUED, position=ev.position, estimated_wait_s=ev.estimated_wait_s)

    async def got_done(self, ev: TurnDone) -> None:
        self.frames.metadata.setdefault("voicemesh_region", ev.region)
        self.usage = ev.usage
        self.frames.stages.region_done(ev.timings)
        if ev.status == "failed":  # the router fails over on these; should one slip through
            await self.got_degraded(Degraded(reason=ev.error or "region_failed"))
        else:
            await self._release(self.heard.take_pending())  # the region completed: its text is the answer

    async def got_degraded(self, ev: Degraded) -> None:
        self.frames.stages.degraded(time.perf_counter())
        if ev.transcript:
            await self._transcribed(ev.transcript)
        self.heard.take_pending()  # ``ev.unvoiced_text`` is the same text, now spoken by the edge
        text = self.voice.words(ev, self.heard, voiced=self.voiced)
        if not text:
            return  # the answer was heard up to a clause end and nothing is missing
        metadata = self.frames.metadata
        metadata.update(voicemesh_degraded="true", served_by="edge", voicemesh_degraded_reason=ev.reason)
        metadata.pop("voicemesh_region", None)
        if not self.frames.output_audio:
            await self._release(text)
            return
        async for sentence, pcm in self.voice.speak(text):
            await self._release(sentence, pcm)

    async def got_refused(self, ev: ClientRefused) -> None:
        self.refused = ev
        self.heard.take_pending()
        if ev.code == InvalidToolCall.code:
            return  # the model's output, not a client event, was at fault: ``response.done`` says why
        await self.frames.send(error_event(ev.error(), param=ev.param, error_type=ev.error_type))

    async def _release(
        self, piece: str, pcm: bytes = b"", received: float = 0.0, *, space: bool = True
    ) -> None:
        """``piece`` of the reply goes to the caller: with its audio, through the player (which sends
        its transcript delta as it sends the audio); shown at once in a text-only response."""
        if not piece and not pcm:
            return
        self.text.append(spaced(self.text[-1] if self.text else "", piece) if space else piece)
        if self.frames.output_audio:
            self.player.put(Clause(piece, pcm, received))
        elif delta := self.heard.sent(piece, space=space):
            await self.frames.text_delta(delta)

    async def _transcribed(self, text: str) -> None:
        if self.transcript is not None or self.on_transcript is None:  # typed turns have none
            return
        self.transcript = text
        await self.on_transcript(text)
