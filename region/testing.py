"""Drive a ``TurnSession`` with real protocol frames and no socket (in the spirit of pipecat's
``run_test``): push the frames an edge would send, get back every frame the region sent, decoded.

    node = RegionNode(settings, llm_url)        # warm it for turns; validation needs no models
    out = await run_frames(node, [encode(TurnStart(turn_id="t", text="Hi"))], until=TurnDone)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from region.node import RegionNode
from region.session import TurnSession
from wire.turn import RegionMessage, decode_region


class MemoryChannel:
    """A ``session.Channel`` over queues: ``push()`` what the edge sends, read ``sent`` back."""

    def __init__(self) -> None:
        self._inbox: asyncio.Queue[str | bytes | None] = asyncio.Queue()
        self.sent: list[RegionMessage | bytes] = []
        self._changed = asyncio.Event()

    def push(self, frame: str | bytes | None) -> None:
        """A frame from the edge; ``None`` closes the connection."""
        self._inbox.put_nowait(frame)

    async def receive(self) -> str | bytes | None:
        return await self._inbox.get()

    async def send_text(self, data: str) -> None:
        self.sent.append(decode_region(data))
        self._changed.set()

    async def send_bytes(self, data: bytes) -> None:
        self.sent.append(data)
        self._changed.set()

    async def wait_for(
        self, kind: type, count: int = 1, within_s: float = 30.0
    ) -> list[RegionMessage | bytes]:
        """Wait until ``count`` messages of ``kind`` have been sent; return everything sent so far."""
        async with asyncio.timeout(within_s):
            while sum(isinstance(m, kind) for m in self.sent) < count:
                self._changed.clear()
                await self._changed.wait()
        return list(self.sent)


async def run_frames(
    node: RegionNode, frames: Sequence[str | bytes], *, until: type, count: int = 1, within_s: float = 30.0
) -> list[RegionMessage | bytes]:
    """Send ``frames`` on a fresh session, wait for ``count`` messages of type ``until``, close the
    session (cancelling anything still running) and return what the region sent."""
    channel = MemoryChannel()
    session = asyncio.create_task(TurnSession(node, channel).serve())
    for frame in frames:
        channel.push(frame)
    try:
        return await channel.wait_for(until, count, within_s)
    finally:
        channel.push(None)
        await session
