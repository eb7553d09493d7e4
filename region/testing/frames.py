"""Drive a ``TurnSession`` with real protocol frames and no socket (``region.testing``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from region.node import RegionNode, Report
from region.protocols import LlmClient, SpeechToText, TextToSpeech
from region.session import TurnSession
from region.settings import AdmissionSettings, LlmSettings, RegionSettings, SttSettings, TtsSettings
from region.testing.models import FixedTranscript, ScriptedLlm, ToneTts
from region.turn_state import Stages
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


@asynccontextmanager
async def open_session(node: RegionNode) -> AsyncIterator[MemoryChannel]:
    """A session on ``node`` for the body; on the way out the edge "disconnects" and the session
    (with anything it still runs) is awaited."""
    channel = MemoryChannel()
    session = asyncio.create_task(TurnSession(node, channel).serve())
    try:
        yield channel
    finally:
        channel.push(None)
        await session


async def run_frames(
    node: RegionNode, frames: Sequence[str | bytes], *, until: type, count: int = 1, within_s: float = 30.0
) -> list[RegionMessage | bytes]:
    """Send ``frames`` on a fresh session, wait for ``count`` messages of type ``until``, close the
    session (cancelling anything still running) and return what the region sent."""
    async with open_session(node) as channel:
        for frame in frames:
            channel.push(frame)
        return await channel.wait_for(until, count, within_s)


def standin_node(
    stt: SpeechToText | None = None,
    llm: LlmClient | None = None,
    tts: TextToSpeech | None = None,
    *,
    admission: AdmissionSettings | None = None,
    report: Report | None = None,
) -> RegionNode:
    """A region node (default limits) on stand-ins: the ones given, defaults for the rest."""
    settings = RegionSettings(
        region_id="stand-in",
        stt=SttSettings(model="stand-in"),
        llm=LlmSettings(model="stand-in", served_name="stand-in"),
        tts=TtsSettings(model="stand-in", voices="stand-in", default_voice="tone"),
        admission=admission or AdmissionSettings(),
    )
    stages = Stages(stt=stt or FixedTranscript(), llm=llm or ScriptedLlm(), tts=tts or ToneTts())
    return RegionNode(settings, stages, report=report)
