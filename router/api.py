"""What the edge sees of the router: one call per turn, a stream of events back.

The edge never talks to a region itself. It hands each turn to a ``TurnRouter`` and forwards the
events it gets: the region's progress (``RegionProgress``: queue position, transcript, text, audio,
the completed ``turn.done``), the router's notes on where the turn went, and exactly one ending:
``TurnDone``, ``ClientRefused`` (the request was at fault: the edge answers with an ``error``) or
``Degraded`` (no region could finish: the edge speaks for itself). Errors are already classified:
the edge never reads a region's error or rejection itself. Cancelling is closing the stream
(``aclose()`` or cancelling the consuming task): the router then cancels the region's turn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from wire.client import ClauseAudio
from wire.errors import ProtocolError
from wire.turn import TextDelta, ToolCalls, Transcript, TurnAdmitted, TurnDone, TurnQueued, TurnStart


@dataclass(frozen=True, slots=True)
class SessionRouting:
    """What the router needs to know about the session a turn belongs to."""

    session_id: str
    residency: frozenset[str] | None = None
    """Only regions carrying one of these tags may serve the session; ``None`` = anywhere."""


@dataclass(frozen=True, slots=True)
class Routed:
    """The turn is being served by ``region`` (sent again after each failover)."""

    region: str
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class FailedOver:
    """``from_region`` failed (``reason`` is a ``wire.errors`` code); the turn moves on."""

    from_region: str
    to_region: str
    reason: str
    heard_text: str = ""


@dataclass(frozen=True, slots=True)
class Degraded:
    """No allowed region can finish the turn: the edge must speak for itself (Piper).

    ``unvoiced_text`` is reply text a region produced whose audio never arrived: speak it. When it is
    empty and the caller heard nothing yet, the edge speaks its hold/apology message (after a reply
    heard up to a clause end it says nothing more: ``edge/turns/edge_voice.py``).
    """

    reason: str
    unvoiced_text: str = ""
    transcript: str = ""
    tried: tuple[str, ...] = field(default_factory=tuple)
    failed_region: str = ""
    """The region whose failure left the turn with nowhere to go (``""``: none failed on the way)."""
    failure: str = ""
    """That failure's ``wire.errors`` code (the audit trail's last hop: region -> edge, and why)."""


@dataclass(frozen=True, slots=True)
class ClientRefused:
    """The turn's request is at fault (``code`` is a ``wire.errors.ProtocolError`` code): any region
    would refuse it, so it was not retried and no breaker counted it."""

    code: str
    message: str
    param: str | None = None
    error_type: str = "invalid_request_error"
    """The Realtime ``error.type``: ``server_error`` when the edge refuses by policy for a reason that
    is not the client's (``on_no_region: error``, ``edge/tenancy/session_tenancy.py``)."""

    @classmethod
    def of(cls, exc: ProtocolError) -> ClientRefused:
        return cls(code=exc.code, message=exc.message)

    def error(self) -> ProtocolError:
        return ProtocolError(self.message, code=self.code)


RegionProgress = TurnQueued | TurnAdmitted | Transcript | TextDelta | ClauseAudio | ToolCalls | TurnDone
"""What a region says about a turn that the edge relays (``TurnDone`` only when completed or
cancelled: a failed one is a region failure, handled by the router). ``ToolCalls`` comes at most
once per turn, however many regions served it."""

RoutedEvent = RegionProgress | Routed | FailedOver | Degraded | ClientRefused


class TurnRouter(Protocol):
    def run_turn(
        self, session: SessionRouting, start: TurnStart, audio: bytes | None = None
    ) -> AsyncIterator[RoutedEvent]:
        """Serve one turn; the stream ends after ``TurnDone``, ``ClientRefused`` or ``Degraded``."""
        ...

    def status(self) -> dict[str, object]:
        """A JSON-ready snapshot for the edge's ``/status`` and ``/ops``."""
        ...

    async def aclose(self) -> None: ...
