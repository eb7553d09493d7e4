"""A degraded turn, answered by the edge's own voice: the reply text a region produced but never
voiced, or else the hold message; ``response.metadata`` says the edge served it and why."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edge.playback import Clause
from edge.protocols import FallbackSpeaker
from router.api import Degraded


@dataclass
class FallbackReply:
    voice: FallbackSpeaker
    hold_message: str

    async def speak(
        self,
        ev: Degraded,
        metadata: dict[str, str],
        say: Callable[[str], Awaitable[None]],
        play: Callable[[Clause], None],
    ) -> None:
        """``say`` adds text the response did not have yet; ``play`` queues each spoken sentence."""
        metadata.update(voicemesh_degraded="true", served_by="edge", voicemesh_degraded_reason=ev.reason)
        metadata.pop("voicemesh_region", None)
        text = ev.unvoiced_text.strip()
        if not text:
            text = self.hold_message
            await say(text)
        async for sentence, pcm in self.voice.speak(text):
            play(Clause(sentence, pcm))
