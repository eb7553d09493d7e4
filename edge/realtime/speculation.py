"""An answer started at a pause in the user's speech, before the end of the turn is called.

Server VAD calls the end of a turn after ``silence_duration_ms`` of silence (500 ms by default).
At a shorter pause the edge already knows what that turn would send a region: the same audio, the
same history, the same settings. So it starts the turn then, and the region transcribes and
answers while the edge waits out the rest of the silence window. The user sees nothing of it:
the router's events are only read into a queue. When the turn is called with exactly the turn
that was started (``matches``), the response relays that queue instead of starting a new turn;
when speech comes back, or the turn differs (a ``session.update`` or a new item in between), the
started turn is closed, which cancels it in its region, and was never seen.

Under ``semantic_vad`` the turn asks its region how likely its words end the user's turn
(``TurnStart.end_of_turn``): ``end_of_turn`` is that answer, for the turn model
(``edge/realtime/semantic_turns.py``); a turn called the same way adopts it all the same.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import cast

import msgspec
from opentelemetry.trace import INVALID_SPAN, Span

from edge.shared.metrics import SPECULATIVE_TURNS
from router.api import RoutedEvent, SessionRouting
from wire.tasks import cancel_and_wait
from wire.turn import Transcript, TurnStart

_END = object()
log = logging.getLogger("voicemesh.edge")


class SpeculativeTurn:
    def __init__(
        self,
        routing: SessionRouting,
        start: TurnStart,
        audio: bytes,
        events: AsyncIterator[RoutedEvent],
        *,
        span: Span = INVALID_SPAN,
    ) -> None:
        self.routing = routing
        self.span = span
        """The turn's span (``edge/shared/tracing.py``), for the response that adopts it."""
        self.start = start
        self.audio = audio
        self.started_at = time.perf_counter()
        self._events = events
        self._queue: asyncio.Queue[tuple[float, object]] = asyncio.Queue()
        self._arrived = self.started_at
        self._error: BaseException | None = None
        self._pump = asyncio.create_task(self._read(), name=f"speculative {start.turn_id}")
        self._adopted = False
        self._words: asyncio.Future[float | None] = asyncio.get_running_loop().create_future()

    def matches(self, routing: SessionRouting, start: TurnStart, audio: bytes | None) -> bool:
        """``start`` (its own id aside) and ``audio``, routed as ``routing``, are the turn begun."""
        same = msgspec.structs.replace(start, turn_id=self.start.turn_id, end_of_turn=self.start.end_of_turn)
        return not self._adopted and routing == self.routing and audio == self.audio and same == self.start

    def adopt(self) -> AsyncGenerator[RoutedEvent, None]:
        """The turn's events for a response to relay, those that came already first."""
        self._adopted = True
        SPECULATIVE_TURNS.labels("adopted").inc()
        return self._relayed()

    async def end_of_turn(self) -> float | None:
        """The region's probability that the words heard end the turn (``Transcript.end_of_turn``):
        ``None`` when it gave none (not asked, no LLM answer, or the turn ended without a transcript)."""
        return await asyncio.shield(self._words)

    def arrival(self) -> float:
        """When the event the response just read reached the edge (its stages are measured then)."""
        return self._arrived

    async def drop(self) -> None:
        """Not the turn that was called (or none will be): cancel it, unseen."""
        if not self._adopted:
            SPECULATIVE_TURNS.labels("dropped").inc()
        await self.aclose()

    async def _read(self) -> None:
        try:
            async for ev in self._events:
                self._queue.put_nowait((time.perf_counter(), ev))
                if isinstance(ev, Transcript) and not self._words.done():
                    log.debug("words at a pause: %r, end of turn %s", ev.text, ev.end_of_turn)
                    self._words.set_result(ev.end_of_turn)
        except Exception as exc:  # the response's relay classifies it, as if it had read it itself
            self._error = exc
        finally:
            self._queue.put_nowait((time.perf_counter(), _END))
            if not self._words.done():
                self._words.set_result(None)

    async def _relayed(self) -> AsyncGenerator[RoutedEvent, None]:
        try:
            while True:
                self._arrived, ev = await self._queue.get()
                if ev is _END:
                    break
                yield cast(RoutedEvent, ev)
            if self._error is not None:
                raise self._error
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop reading and close the router's stream (idempotent). Also for a response that ended
        before it read its first event: a generator never started skips its ``finally``."""
        await cancel_and_wait(self._pump)
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()  # (the router's stream: closing it cancels the region's turn)
