"""One ``POST /v1/audio/speech`` request as a speak-only turn: routed, failed over, or spoken by the
edge's own voice, as a stream of 24 kHz PCM16 pieces.

The turn (``TurnStart.speak_text``) goes through the router like any other: residency, breakers,
failover. A region reads the text aloud clause by clause; when it dies mid-stream, the router hands
the next region the clauses already delivered (``heard_text``) and it goes on from the next one, so
nothing is said twice. With no region left, the edge's Piper voice speaks what was not delivered
yet (or all of it), unless the key says ``on_no_region: error``.

``open()`` reads the turn up to its first audio (or its ending) before any byte is sent, so the
HTTP status and headers can tell what happened: a request a region refused is a 4xx, no region at
all is a 503 (or the fallback voice, said in ``x-voicemesh-fallback``), and the serving region is
known (``x-voicemesh-region``). What happens after the first byte is in the SSE ``done`` event.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from edge.shared.protocols import FallbackSpeaker
from edge.shared.tracing import traced_turn
from edge.tenancy.audit import EDGE, TurnTrail
from edge.turns.edge_voice import EdgeVoice
from edge.turns.heard import Heard
from edge.turns.reader import TurnHandler, TurnReader
from router.api import ClientRefused, Degraded, Routed, SessionRouting, TurnRouter
from wire.client import ClauseAudio
from wire.errors import NoRegionAvailable
from wire.turn import TurnDone, TurnStart

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Piece:
    """Some audio for the client: ``by`` a region id, or ``edge`` (the fallback voice)."""

    pcm: bytes
    by: str


@dataclass
class SpeechOutcome:
    """What the request's stream did; complete once the stream has ended."""

    regions: list[str] = field(default_factory=list)
    """Every region that served part of it, in order."""
    fallback: str | None = None
    """``edge-voice`` when the edge's own voice spoke (some of) it; the router's reason is in
    ``degraded_reason``."""
    degraded_reason: str = ""
    heard: Heard = field(default_factory=Heard)
    """What was delivered so far (``heard.voiced``: its clauses, joined)."""
    audio_bytes: int = 0
    complete: bool = False
    """A region ended the turn as ``completed``: every clause was spoken by regions, none cut (what
    the speech cache may store, ``edge/speech/speech_cache.py``)."""


Book = Callable[[TurnTrail, str], Awaitable[None]]
"""Books the finished request (``edge/tenancy/accounting.py``): its trail and ``completed``, ``failed`` or
``cancelled`` (the client went away)."""


class SpeechStream(TurnHandler):
    def __init__(
        self, router: TurnRouter, fallback: FallbackSpeaker, routing: SessionRouting, start: TurnStart,
        *, speak_on_no_region: bool = True, book: Book | None = None, all_or_nothing: bool = False,
    ) -> None:  # fmt: skip
        assert start.speak_text is not None
        self._voice = EdgeVoice(fallback)
        self._start = start
        self._text = start.speak_text
        self.outcome = SpeechOutcome()
        self.trail = TurnTrail()
        _, events = traced_turn("speech", start, lambda: router.run_turn(routing, start))
        self._reader = TurnReader(events, heard=self.outcome.heard, trail=self.trail)
        self._speak_on_no_region = speak_on_no_region
        self._all_or_nothing = all_or_nothing
        """No region left, or a refusal, after some audio: raise too (a batch item is tried again
        whole, later, or fails), rather than let the edge's voice finish it or keep half of it."""
        self._first: list[Piece] = []
        self._ready: deque[Piece] = deque()
        """Pieces the reader's hooks made, for ``_pieces`` to yield."""
        self._degraded: Degraded | None = None
        self._book = book
        self._status = "cancelled"
        """Until the stream ends on its own (``completed``) or raises (``failed``)."""
        self._gen = self._pieces()  # one generator, read by ``open`` then by ``pcm``

    async def open(self) -> None:
        """Read up to the first audio. Raises the request's ``ProtocolError`` when a region refused
        it, ``NoRegionAvailable`` when no region could serve it and the key wants an error."""
        try:
            self._first.append(await anext(self._gen))
        except StopAsyncIteration:
            pass  # nothing to say (no audio at all): an empty body
        except BaseException:
            self._status = "failed"
            await self.aclose()
            raise

    async def pcm(self) -> AsyncIterator[Piece]:
        """Every piece, from the first; closing it (the client went away) cancels the region's turn."""
        try:
            for piece in self._first:
                yield piece
            self._first = []
            async for piece in self._gen:
                yield piece
            self._status = "completed"
        except Exception:
            self._status = "failed"
            raise
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        with contextlib.suppress(Exception):
            await self._gen.aclose()
        await self._reader.aclose()
        book, self._book = self._book, None  # once, however the stream ended
        if book is not None:
            await book(self.trail, self._status)

    async def _pieces(self) -> AsyncGenerator[Piece, None]:
        async with contextlib.aclosing(self._reader.read(self)) as reading:
            async for _ in reading:
                while self._ready:
                    yield self._ready.popleft()
        if self._degraded is not None:
            async for piece in self._edge_voice(self._degraded):
                yield piece

    async def got_routed(self, ev: Routed) -> None:
        self.outcome.regions.append(ev.region)

    async def got_clause(self, ev: ClauseAudio, piece: str) -> None:
        self.outcome.audio_bytes += len(ev.pcm)
        self._ready.append(Piece(ev.pcm, self._reader.region))

    async def got_refused(self, ev: ClientRefused) -> None:
        if not self.outcome.audio_bytes or self._all_or_nothing:  # a batch item keeps no half result
            raise ev.error()
        log.warning("speech %s refused mid-stream: %s", self._start.turn_id, ev.message)

    async def got_degraded(self, ev: Degraded) -> None:
        self._degraded = ev  # spoken once the reader is done (``_pieces``)

    async def got_done(self, ev: TurnDone) -> None:
        self.outcome.complete = ev.status == "completed"

    async def _edge_voice(self, ev: Degraded) -> AsyncIterator[Piece]:
        out = self.outcome
        rest = self._voice.words(ev, out.heard, voiced=bool(out.audio_bytes), known_text=self._text)
        if not rest:
            return  # every clause was delivered before the region died: nothing is missing
        if not self._speak_on_no_region and (self._all_or_nothing or not out.audio_bytes):
            raise NoRegionAvailable(f"no region could serve this request ({ev.reason})")
        out.fallback, out.degraded_reason = "edge-voice", ev.reason
        async for _sentence, pcm in self._voice.speak(rest):
            out.audio_bytes += len(pcm)
            yield Piece(pcm, EDGE)


__all__ = ["Book", "Piece", "SpeechOutcome", "SpeechStream"]
