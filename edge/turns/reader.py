"""The one reader of a router's stream of events (``router.api.RoutedEvent``) at the edge.

``TurnReader`` reads one turn's stream, keeps what every user of it needs (the regions that served
it, the audit trail, the ``Heard`` record) and hands each event to its user's typed hook
(``TurnHandler``: override the hooks you need). It stops after the turn's ending (``TurnDone``,
``Degraded`` or ``ClientRefused``) and closes the stream however reading ends, which cancels the
region's turn. The Realtime relay, the speech API and transcription all read through it.

``refuse`` is a key's ``on_no_region: error`` policy: a ``Degraded`` it answers with a refusal is
handed on as that refusal (after the user's transcript, still theirs to see), and no voice speaks.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from edge.tenancy.audit import TurnTrail
from edge.turns.heard import Heard
from router.api import ClientRefused, Degraded, FailedOver, Routed, RoutedEvent
from wire.client import ClauseAudio
from wire.turn import TextDelta, ToolCalls, Transcript, TurnAdmitted, TurnDone, TurnQueued

Refuse = Callable[[Degraded], ClientRefused | None]


class TurnHandler:
    """What a reader's user does with each kind of event; every hook does nothing by default."""

    async def got_routed(self, ev: Routed) -> None: ...

    async def got_failover(self, ev: FailedOver) -> None: ...

    async def got_queued(self, ev: TurnQueued) -> None: ...

    async def got_admitted(self, ev: TurnAdmitted) -> None: ...

    async def got_transcript(self, ev: Transcript) -> None: ...

    async def got_text(self, ev: TextDelta) -> None:
        """Reply text; it waits in ``Heard.pending`` until its clause's audio comes."""

    async def got_clause(self, ev: ClauseAudio, piece: str) -> None:
        """A clause's audio; ``piece``: its text, out of ``Heard.pending``."""

    async def got_calls(self, ev: ToolCalls) -> None: ...

    async def got_done(self, ev: TurnDone) -> None: ...

    async def got_degraded(self, ev: Degraded) -> None: ...

    async def got_refused(self, ev: ClientRefused) -> None: ...


class TurnReader:
    def __init__(
        self,
        events: AsyncIterator[RoutedEvent],
        *,
        heard: Heard | None = None,
        trail: TurnTrail | None = None,
        refuse: Refuse | None = None,
        turn_id: str = "",
        arrival: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._events = events
        self.heard = heard if heard is not None else Heard()
        self.trail = trail if trail is not None else TurnTrail()
        self._refuse = refuse
        self._turn_id = turn_id
        self._arrival = arrival
        self.received = 0.0
        """When the event being handled reached the edge (``arrival``: now, or when a turn started
        early read it, ``edge/realtime/speculation.py``)."""
        self.regions: list[str] = []
        """Every region that served the turn, in order."""
        self.ended = False

    @property
    def region(self) -> str:
        """The region serving the turn now (``""``: none yet)."""
        return self.regions[-1] if self.regions else ""

    async def run(self, handler: TurnHandler) -> None:
        """Read to the turn's end, handing each event to ``handler``."""
        async for _ in self.read(handler):
            pass

    async def read(self, handler: TurnHandler) -> AsyncGenerator[None, None]:
        """Like ``run``, pausing after each event (a user that yields what its hooks made)."""
        try:
            async for ev in self._events:
                self.received = self._arrival()
                await self._hand(ev, handler)
                yield
                if self.ended:
                    return
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._events.aclose()  # type: ignore[attr-defined]

    async def _hand(self, ev: RoutedEvent, h: TurnHandler) -> None:
        trail, heard = self.trail, self.heard
        match ev:
            case ClauseAudio():
                trail.audio_out_bytes += len(ev.pcm)
                await h.got_clause(ev, heard.clause(ev.clause.text))
            case TextDelta():
                heard.text(ev.delta)
                await h.got_text(ev)
            case Transcript():
                await h.got_transcript(ev)
            case ToolCalls():
                await h.got_calls(ev)
            case Routed():
                self.regions.append(ev.region)
                trail.regions.append(ev.region)
                await h.got_routed(ev)
            case TurnQueued():
                await h.got_queued(ev)
            case TurnAdmitted():
                await h.got_admitted(ev)
            case FailedOver():
                heard.take_pending()  # the failed region's unvoiced text: the next one continues after
                trail.failed_over(ev.from_region, ev.to_region, ev.reason)
                await h.got_failover(ev)
            case TurnDone():
                self.ended = True
                await h.got_done(ev)
            case Degraded():
                self.ended = True
                trail.degraded = ev
                heard.take_pending()  # ``ev.unvoiced_text`` is that text, for the edge's voice to say
                refusal = self._refuse(ev) if self._refuse is not None else None
                if refusal is None:
                    await h.got_degraded(ev)
                    return
                if ev.transcript:  # what the user said is still theirs to see
                    await h.got_transcript(Transcript(turn_id=self._turn_id, text=ev.transcript))
                await self._refused(refusal, h)
            case ClientRefused():
                await self._refused(ev, h)

    async def _refused(self, ev: ClientRefused, h: TurnHandler) -> None:
        self.ended = True
        self.trail.refused = ev
        self.heard.take_pending()
        await h.got_refused(ev)


__all__ = ["Refuse", "TurnHandler", "TurnReader"]
