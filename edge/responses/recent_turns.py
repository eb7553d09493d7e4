"""The edge's last few responses, for the operations page's waterfall (``edge/web/waterfall.js``).

Each record is read back from what ``response.done`` carried (``voicemesh_stages``, the serving
region, the failover), so the page shows what the client and the metrics got; only the times of
the failovers, which that metadata does not hold, come from the response's stage marks.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from edge.responses.response import Response, ResponseResult
from edge.responses.stages import read_stages


class RecentTurns:
    """This edge's last ``cap`` finished responses, newest last."""

    def __init__(self, cap: int = 20) -> None:
        self._turns: deque[dict[str, Any]] = deque(maxlen=cap)

    def add(self, session_id: str, turn_id: str, response: Response, result: ResponseResult) -> None:
        meta = result.metadata
        self._turns.append(
            {
                "at": time.time(),
                "session_id": session_id,
                "turn_id": turn_id,
                "response_id": response.id,
                "status": result.status,
                "served_by": meta.get("served_by", "region"),
                "region": meta.get("voicemesh_region"),
                "failed_over_from": meta.get("voicemesh_failed_over_from"),
                "stages_ms": read_stages(meta),
                "failovers": response.frames.stages.failovers(),
            }
        )

    def list(self) -> list[dict[str, Any]]:
        return list(self._turns)


__all__ = ["RecentTurns"]
