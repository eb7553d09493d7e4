"""A router's events for one response, turned into what the client sees: transcript deltas, audio
clauses for the player, vendor events on routing/queueing/failover, and ``response.metadata``.

Whatever way the router says it cannot finish (``Degraded``, a region error or rejection, a failed
``turn.done``, or raising), the fallback voice answers instead.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from edge.events import VENDOR_FAILED_OVER, VENDOR_QUEUED, VENDOR_ROUTED
from edge.fallback_reply import FallbackReply
from edge.playback import Clause, Player
from edge.response_frames import ResponseFrames
from router.api import Degraded, FailedOver, Routed, RoutedEvent
from wire.client import ClauseAudio
from wire.errors import VoicemeshError
from wire.turn import TextDelta, Transcript, TurnAdmitted, TurnDone, TurnError, TurnQueued, TurnRejected


@dataclass
class RouterRelay:
    events: AsyncIterator[RoutedEvent]
    frames: ResponseFrames
    player: Player
    fallback: FallbackReply
    on_transcript: Callable[[str], Awaitable[None]] | None = None
    """Called once, with the region's transcript of the user's audio (audio turns only)."""
    text: list[str] = field(default_factory=list)
    """The reply text so far (transcript deltas sent)."""
    transcript: str | None = None

    async def run(self) -> None:
        """Relay until the router's stream ends; then tell the player no more audio is coming."""
        try:
            async for ev in self.events:
                if not await self._relay(ev, time.perf_counter()):
                    break
        except VoicemeshError as exc:  # a router that raises instead of degrading: still answer
            await self._degrade(Degraded(reason=exc.code))
        finally:
            self.player.put(None)

    async def _relay(self, ev: RoutedEvent, received: float) -> bool:
        """Handle one event; ``False`` when the turn is over."""
        metadata = self.frames.metadata
        if isinstance(ev, ClauseAudio):
            self.player.put(Clause(ev.clause.text, ev.pcm, received))
        elif isinstance(ev, TextDelta):
            await self._say(ev.delta)
        elif isinstance(ev, Transcript):
            await self._transcribed(ev.text)
        elif isinstance(ev, Routed):
            metadata["voicemesh_region"] = ev.region  # the registry's name for it
            await self.frames.vendor(VENDOR_ROUTED, region=ev.region, attempt=ev.attempt)
        elif isinstance(ev, TurnAdmitted):
            metadata.setdefault("voicemesh_region", ev.region)
        elif isinstance(ev, FailedOver):
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
        elif isinstance(ev, TurnError | TurnRejected):
            await self._degrade(Degraded(reason=ev.code))
            return False
        elif isinstance(ev, TurnDone):
            metadata.setdefault("voicemesh_region", ev.region)
            if ev.status == "failed":
                await self._degrade(Degraded(reason=ev.error or "region_failed"))
            return False
        return True

    async def _say(self, delta: str) -> None:
        self.text.append(delta)
        await self.frames.content("response.output_audio_transcript.delta", delta=delta)

    async def _transcribed(self, text: str) -> None:
        if self.transcript is not None or self.frames.user_item_id is None:
            return
        self.transcript = text
        if self.on_transcript is not None:
            await self.on_transcript(text)

    async def _degrade(self, ev: Degraded) -> None:
        if ev.transcript:
            await self._transcribed(ev.transcript)
        await self.fallback.speak(ev, self.frames.metadata, self._say, self.player.put)
