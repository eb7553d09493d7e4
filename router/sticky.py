"""Sticky sessions: the region that last served each session, bounded (least recently used go)."""

from __future__ import annotations

from collections import OrderedDict


class StickySessions:
    def __init__(self, max_sessions: int) -> None:
        self._max = max_sessions
        self._region: OrderedDict[str, str] = OrderedDict()

    def get(self, session_id: str) -> str | None:
        return self._region.get(session_id)

    def stick(self, session_id: str, region: str) -> None:
        self._region[session_id] = region
        self._region.move_to_end(session_id)
        while len(self._region) > self._max:
            self._region.popitem(last=False)

    def __len__(self) -> int:
        return len(self._region)
