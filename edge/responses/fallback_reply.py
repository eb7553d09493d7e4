"""A degraded turn, answered by the edge's own voice: the reply text a region produced but never
voiced, or else the hold message; ``response.metadata`` says the edge served it and why. A text-only
response gets the same words as text, and no synthesis.

When the user already heard the region's answer up to a clause end and nothing is left unvoiced
(the region died after its last audio), the edge says nothing: an apology would follow an answer
that sounded complete, and the response simply completes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from edge.responses.playback import Clause
from edge.shared.protocols import FallbackSpeaker
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
        play: Callable[[Clause], None] | None,
        *,
        voiced: bool = False,
    ) -> None:
        """``say`` adds what is spoken to the transcript; ``play`` queues each spoken sentence
        (``None``: a text-only response, nothing spoken). ``voiced``: region output of this response
        already reached the client."""
        text = ev.unvoiced_text.strip()
        if not text and voiced:
            return
        metadata.update(voicemesh_degraded="true", served_by="edge", voicemesh_degraded_reason=ev.reason)
        metadata.pop("voicemesh_region", None)
        text = text or self.hold_message
        await say(text)
        if play is None:
            return
        async for sentence, pcm in self.voice.speak(text):
            play(Clause(sentence, pcm))
