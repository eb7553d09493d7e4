"""What the synthetic callers share with the drill: where the edge is, how callers behave, the turn
moments that scenarios wait on to time their faults, and every turn record."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from voicemesh.drills.records import Clock, TurnRecord

TOKENS_PER_SENTENCE = 32
"""A spoken sentence's token budget: room for about twenty words."""

Predicate = Callable[[str, TurnRecord], bool]


class Moments:
    """Turn moments (``first_text``, ``first_audio``, ``done``) that scenarios wait on to time their
    faults."""

    def __init__(self) -> None:
        self._waiters: list[tuple[Predicate, asyncio.Future[TurnRecord]]] = []
        self.listeners: list[Callable[[str, TurnRecord], None]] = []

    def emit(self, kind: str, record: TurnRecord) -> None:
        for listener in self.listeners:
            listener(kind, record)
        for pred, fut in list(self._waiters):
            if not fut.done() and pred(kind, record):
                fut.set_result(record)

    async def wait(self, kind: str, *, turn: int | None = None, timeout_s: float | None = None) -> TurnRecord:
        fut: asyncio.Future[TurnRecord] = asyncio.get_running_loop().create_future()
        pred: Predicate = lambda k, r: k == kind and (turn is None or r.turn == turn)  # noqa: E731
        self._waiters.append((pred, fut))
        try:
            return await asyncio.wait_for(fut, timeout_s)
        finally:
            self._waiters.remove((pred, fut))


@dataclass(frozen=True)
class EdgeTarget:
    url: str
    """``http://host:port`` of the edge."""
    api_key: str
    admin_key: str = ""
    """For the edge's ``/status`` (admin scope); callers talk with ``api_key``."""

    @property
    def ws_base(self) -> str:
        return "ws" + self.url.rstrip("/").removeprefix("http") + "/v1"


@dataclass(frozen=True)
class CallerSettings:
    turns: int = 3
    turn_timeout_s: float = 90.0
    listen_cap_s: float = 1.5
    """After an answer, listen at most this long (a real caller would hear the whole answer)."""
    silence_ms: int = 500
    instructions: str = "You are a voice assistant. Answer in one short sentence."
    max_output_tokens: int = 48
    tool_callers: int = 0
    """How many callers (the last ones) call a function every turn."""
    barge_in_every: int = 0
    """Callers that call no function speak over every Nth answer as soon as its audio starts (a
    barge-in: the edge cancels it); the interrupted turn counts as barged in, not lost. 0: never."""
    resume: bool = False
    """Reconnect and resume the session when the edge drops it (edge drills), instead of ending."""

    def answering_in(self, sentences: int) -> CallerSettings:
        """These settings with answers of ``sentences`` sentences asked for, and the tokens for them."""
        return replace(
            self,
            instructions=f"You are a voice assistant. Answer in {sentences} full sentences.",
            max_output_tokens=max(self.max_output_tokens, TOKENS_PER_SENTENCE * sentences),
        )


@dataclass
class CallerState:
    """What every caller shares with the drill: the clock, the moments, and all turn records."""

    clock: Clock = field(default_factory=Clock)
    moments: Moments = field(default_factory=Moments)
    records: list[TurnRecord] = field(default_factory=list)
    sessions_open: int = 0
    calls: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    """A tool caller's turn ``(caller, turn)`` -> the call ids it received, in order."""
    tool_callers: set[int] = field(default_factory=set)
    stopping: bool = False
    """Callers finish the turn they are in and hang up (the chaos drill's window is over)."""
    resumes: int = 0
    """Sessions resumed after a drop (``resume`` callers)."""
    items_known: int = 0
    """Conversation items the resuming callers had seen done when they were dropped, summed."""
    items_lost: int = 0
    """Of those, the ones their resumed session did not give back."""

    def in_flight(self) -> list[TurnRecord]:
        return [r for r in self.records if r.done is None and r.status == "in_progress"]
