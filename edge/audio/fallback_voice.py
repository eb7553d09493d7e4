"""The edge's own voice (Piper) for turns no region can finish.

Piper speaks at 22.05 kHz; clients hear 24 kHz, so every sentence is resampled with soxr.
Synthesis runs on a worker thread: the event loop keeps serving every other session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from wire.audio import CLIENT_RATE, float_to_pcm16, resample
from wire.errors import ModelMissing
from wire.text import split_sentences


class FallbackVoice:
    def __init__(self, model_path: str) -> None:
        self._path = model_path
        self._voice: Any = None
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        async with self._lock:
            if self._voice is None:
                self._voice = await asyncio.to_thread(self._load)

    def _load(self) -> Any:
        from piper import PiperVoice

        try:
            return PiperVoice.load(self._path)
        except Exception as exc:
            raise ModelMissing(
                f"cannot load the Piper voice {self._path}: {exc}; run `voicemesh models fetch`"
            ) from exc

    async def speak(self, text: str) -> AsyncIterator[tuple[str, bytes]]:
        """Yield ``(sentence, 24 kHz PCM16)`` one sentence at a time."""
        await self.load()
        for sentence, pcm in await asyncio.to_thread(self._synthesize, text):
            yield sentence, pcm

    def _synthesize(self, text: str) -> list[tuple[str, bytes]]:
        out = [
            float_to_pcm16(resample(chunk.audio_float_array, chunk.sample_rate, CLIENT_RATE))
            for chunk in self._voice.synthesize(text)
        ]
        # Piper splits sentences itself but does not hand back their text: split the same way, and
        # fall back to one clause when the two splits disagree.
        sentences = split_sentences(text)
        if len(sentences) == len(out):
            return list(zip(sentences, out, strict=True))
        return [(text, b"".join(out))]
