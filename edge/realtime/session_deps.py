"""What a Realtime session uses of the edge, and nothing more: the composition root
(``EdgeServices.session_deps``) builds it; ``edge.testing`` builds it on
stand-ins. The session hands each of its parts the pieces that part uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from edge.realtime.session_snapshot import SessionSnapshots
from edge.responses.recent_turns import RecentTurns
from edge.shared.protocols import FallbackSpeaker, TurnModel, Vad
from edge.shared.settings import EdgeSettings
from edge.tenancy.accounting import Accounting
from edge.tenancy.auth import Principal
from router.api import TurnRouter
from wire.voices import CustomVoice


class VoiceResolver(Protocol):
    """The custom voices a client may name (``edge/speech/custom_voices.py``'s ``VoiceLibrary``)."""

    async def resolve(
        self, asked: str | Mapping[str, Any], principal: Principal, *, param: str
    ) -> CustomVoice:
        """The definition of the voice ``asked`` names, if ``principal`` may use it."""
        ...


@dataclass(frozen=True)
class SessionDeps:
    settings: EdgeSettings
    router: TurnRouter
    vad: Vad
    """Each session takes a stream of it (``Vad.stream``)."""
    fallback: FallbackSpeaker
    """The edge's own voice when no region can answer."""
    snapshots: SessionSnapshots
    """Where the session is saved at its safe points (resume), and this edge's live sessions."""
    voices: VoiceResolver
    accounting: Accounting
    """Each turn's audit record and usage."""
    turn_model: TurnModel | None = None
    """``semantic_vad``'s end of turn (``None``: such turns end at their eagerness timeout)."""
    recent_turns: RecentTurns = field(default_factory=RecentTurns)
    """The last responses' stages and failovers, for the operations page (``GET /status``)."""
    relay_times: list[float] | None = None
    """Benchmarks: how long each relayed clause waited (``edge/responses/playback.py``)."""


__all__ = ["SessionDeps", "VoiceResolver"]
