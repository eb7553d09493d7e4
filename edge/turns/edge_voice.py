"""The edge's own voice (Piper) for a turn no region could finish: the one path that decides what
it says and speaks it, for the Realtime relay and the speech API alike.

It says what the caller has not heard: the reply text a region produced but never voiced, or, for
a speak-only turn (whole text known up front), the text after the clauses voiced. With nothing
voiced and nothing to say it says the hold message (a Realtime reply); when the caller already heard
the answer up to a clause end and nothing is left, it says nothing: an apology would follow an
answer that sounded complete.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from edge.shared.protocols import FallbackSpeaker
from edge.turns.heard import Heard
from router.api import Degraded


@dataclass
class EdgeVoice:
    voice: FallbackSpeaker
    hold_message: str = ""

    def words(self, ev: Degraded, heard: Heard, *, voiced: bool, known_text: str | None = None) -> str:
        """What to say for ``ev`` (``""``: nothing). ``voiced``: region output already reached the
        caller; ``known_text``: a speak-only turn's whole text."""
        if known_text is not None:
            return heard.unvoiced_rest(known_text)
        text = ev.unvoiced_text.strip()
        if text or voiced:
            return text
        return self.hold_message

    async def speak(self, text: str) -> AsyncIterator[tuple[str, bytes]]:
        """Each sentence of ``text`` and its 24 kHz PCM16 audio."""
        async for sentence, pcm in self.voice.speak(text):
            yield sentence, pcm


__all__ = ["EdgeVoice"]
