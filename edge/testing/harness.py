"""``SessionHarness``: one real ``RealtimeSession`` driven by client event JSON, no socket."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from typing import Any

from edge.app.services import EdgeServices
from edge.realtime.session import RealtimeSession
from edge.realtime.session_update import initial_state
from edge.shared.events import new_id
from edge.shared.state import SessionState


class SessionHarness:
    """One real ``RealtimeSession`` on ``services``; ``send()`` client events, read ``sent`` back."""

    def __init__(self, services: EdgeServices, state: SessionState | None = None) -> None:
        self.services = services
        self.state = state or initial_state(services.settings, key_id="test")
        self.sent: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self.session = RealtimeSession(services.session_deps(), self.state, self._receive)

    async def __aenter__(self) -> SessionHarness:
        await self.session.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.session.close()

    async def _receive(self, text: str) -> None:
        self.sent.append(json.loads(text))
        self._changed.set()

    async def send(self, event: dict[str, Any] | str | bytes) -> None:
        """One client frame, as JSON text (a dict is serialised) or raw bytes."""
        raw = json.dumps(event) if isinstance(event, dict) else event
        await self.session.handle(raw)
        await self.session.turns.settled()  # (deterministic: what the VAD heard in it is handled)

    async def turn_detection(self, **td: Any) -> None:
        """``session.update`` of the input's ``turn_detection`` alone (e.g. ``type="server_vad"``)."""
        session = {"type": "realtime", "audio": {"input": {"turn_detection": td}}}
        await self.send({"type": "session.update", "session": session})

    async def append_audio(self, pcm24k: bytes, *, chunk_s: float = 0.1) -> None:
        """``input_audio_buffer.append`` events of ``chunk_s`` each, as a microphone sends them."""
        step = 2 * int(chunk_s * 24_000)
        for off in range(0, len(pcm24k), step):
            audio = base64.b64encode(pcm24k[off : off + step]).decode()
            await self.send({"type": "input_audio_buffer.append", "audio": audio})

    async def say(self, text: str, *, role: str = "user") -> None:
        """``conversation.item.create`` with one text message."""
        kind = "input_text" if role in ("user", "system") else "output_text"
        item = {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        await self.send({"type": "conversation.item.create", "event_id": new_id("evt"), "item": item})

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.sent if e["type"] == type_]

    async def wait_for(self, type_: str, count: int = 1, within_s: float = 30.0) -> list[dict[str, Any]]:
        """Wait until ``count`` events of ``type_`` were sent (in all); return everything sent so far.
        ``within_s`` only stops a broken test from hanging."""
        async with asyncio.timeout(within_s):
            while len(self.of_type(type_)) < count:
                self._changed.clear()
                await self._changed.wait()
        return list(self.sent)


async def run_events(
    services: EdgeServices,
    events: Sequence[dict[str, Any] | str | bytes],
    *,
    until: str,
    count: int = 1,
    within_s: float = 30.0,
) -> list[dict[str, Any]]:
    """Send ``events`` on a fresh session, wait for ``count`` server events of type ``until``, close
    the session and return every server event it sent (``session.created`` first)."""
    async with SessionHarness(services) as harness:
        for event in events:
            await harness.send(event)
        return await harness.wait_for(until, count, within_s)
