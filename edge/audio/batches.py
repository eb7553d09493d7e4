"""What every session of an edge hands one model's worker, taken out in batches (the VAD, the turn
model): handing in never waits and costs no future; the one consumer waits only when nothing is
pending, then takes up to a batch, in the order handed in."""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

T = TypeVar("T")


class Batches(Generic[T]):
    def __init__(self) -> None:
        self._pending: list[T] = []
        self._wake: asyncio.Future[None] | None = None

    def put(self, item: T) -> None:
        self._pending.append(item)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    async def take(self, max_batch: int) -> list[T]:
        """The next batch (the oldest ``max_batch`` at most), once there is one."""
        while not self._pending:
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        batch = self._pending[:max_batch]
        del self._pending[:max_batch]
        return batch


__all__ = ["Batches"]
