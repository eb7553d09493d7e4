"""Where a stock Pipecat pipeline's transports would be, in ``voicemesh bench e2e``: a ``Mic`` that
pushes the caller's microphone (``e2e_caller.Speaker``) as 20 ms ``InputAudioRawFrame``s at
real-time pace, a ``Tap`` after STT that notes the transcript, and an ``Ear`` at the output that notes
what the caller hears (``e2e_caller.TurnLog``)."""

from __future__ import annotations

import asyncio

from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    TranscriptionFrame,
    TTSAudioRawFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicemesh.bench.e2e_caller import Speaker, TurnLog
from voicemesh.realtime import tick
from wire.audio import STT_RATE

FRAME_MS = 20
"""Pipecat's transports hand the pipeline 20 ms of microphone audio at a time."""
FRAME_BYTES = STT_RATE * FRAME_MS // 1000 * 2


class Ear(FrameProcessor):
    """Stands where the output transport would: each answer's audio chunks (a new answer at each
    ``LLMFullResponseStartFrame``), the spoken text, and interruptions (what the output transport
    stops playback on)."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: list[str] = []
        self.reset(TurnLog())

    def reset(self, log: TurnLog) -> None:
        self.log = log
        self.first_text = ""
        self.text = ""
        self._answer = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            self.log.stop()
        elif direction == FrameDirection.DOWNSTREAM:
            if isinstance(frame, TTSAudioRawFrame):
                self.log.audio(self._answer, len(frame.audio) / (frame.sample_rate * 2 * frame.num_channels))
            elif isinstance(frame, TTSTextFrame):
                self.first_text = self.first_text or frame.text
                self.text += (" " if self.text else "") + frame.text
            elif isinstance(frame, LLMFullResponseStartFrame):
                self._answer += 1
                self.log.response(started=True)
            elif isinstance(frame, LLMFullResponseEndFrame):
                self.log.response(started=False)
        if isinstance(frame, ErrorFrame):
            self.errors.append(str(frame.error))
        await self.push_frame(frame, direction)


class Tap(FrameProcessor):
    """Records the user's transcripts as STT emits them (turn clock, text), and passes everything on."""

    def __init__(self) -> None:
        super().__init__()
        self.log = TurnLog()
        self.heard: list[tuple[float, str]] = []

    def transcript(self) -> str:
        """What STT heard of the sentence: everything before the backchannel began."""
        b = self.log.backchannel_s
        return " ".join(text for at, text in self.heard if b is None or at < b).strip()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame):
            self.heard.append((self.log.now(), frame.text))
        await self.push_frame(frame, direction)


class Mic(FrameProcessor):
    """Stands where the input transport would: ``speak`` pushes the caller's microphone."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)

    async def speak(self, speaker: Speaker, until: asyncio.Event, max_s: float) -> None:
        """Push ``speaker``'s frames at real-time pace until ``until`` is set (or ``max_s``)."""
        log = speaker.log
        i = 0
        while not until.is_set() and log.now() < max_s:
            frame = InputAudioRawFrame(audio=speaker.next(), sample_rate=STT_RATE, num_channels=1)
            await self.push_frame(frame)
            i += 1
            await tick(log.t0, i, FRAME_MS / 1000)
