"""Speech to text: faster-whisper, run in a worker thread so the event loop keeps serving."""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from region.cancel import CancelToken
from region.settings import SttSettings
from region.whisper_window import WindowedWhisper
from region.workload import Workload
from wire.audio import FloatAudio
from wire.errors import ModelMissing
from wire.turn import Segment

log = logging.getLogger(__name__)


class Transcriber:
    """``SpeechToText`` with faster-whisper."""

    def __init__(self, settings: SttSettings, workload: Workload | None = None) -> None:
        self.settings = settings
        self.workload = workload or Workload()
        self._model: WindowedWhisper | None = None

    @property
    def ready(self) -> bool:
        return self._model is not None

    async def load(self) -> None:
        """Load the model and run one transcription, so the first real turn pays no warm-up."""
        s = self.settings
        try:
            model = await asyncio.to_thread(
                WindowedWhisper, s.model, device=s.device, compute_type=s.compute_type,
                cpu_threads=s.cpu_threads, window_frames=s.window_frames,
            )  # fmt: skip
        except (RuntimeError, ValueError, OSError) as exc:
            raise ModelMissing(
                f"cannot load Whisper from {s.model}: {exc}; run `voicemesh models fetch`"
            ) from exc
        rng = np.random.default_rng(0)
        noise = (rng.standard_normal(16_000) * 0.01).astype(np.float32)
        self._model = model
        await self.transcribe(noise, CancelToken())

    async def transcribe(self, audio: FloatAudio, cancel: CancelToken) -> str:
        """16 kHz float audio -> text. Cancel takes effect at the next segment boundary."""
        with self.workload.running("stt"):
            segments = await asyncio.to_thread(self._run, audio, cancel, "", "", False)
        return join_segments(segments)

    async def transcribe_timed(
        self, audio: FloatAudio, cancel: CancelToken, *, language: str = "", prompt: str = "",
        timestamps: bool = True,
    ) -> list[Segment]:  # fmt: skip
        """The same as segments; ``language``/``prompt`` override the settings for one turn."""
        with self.workload.running("stt"):
            return await asyncio.to_thread(self._run, audio, cancel, language, prompt, timestamps)

    def _run(
        self, audio: FloatAudio, cancel: CancelToken, language: str, prompt: str, timed: bool
    ) -> list[Segment]:
        assert self._model is not None, "Transcriber.load() first"
        s = self.settings
        segments, _ = self._model.transcribe(
            audio,
            language=language or s.language or None,
            beam_size=s.beam_size,
            condition_on_previous_text=False,
            initial_prompt=prompt or None,
            without_timestamps=not timed,  # a live turn needs no times: decoding them costs a little
        )
        parts: list[Segment] = []
        for segment in segments:  # a lazy generator: each step decodes one more segment
            cancel.raise_if_cancelled()
            if segment.text.strip():
                parts.append(
                    Segment(
                        start=round(segment.start, 3), end=round(segment.end, 3), text=segment.text.strip(),
                        avg_logprob=round(segment.avg_logprob, 4),
                        no_speech_prob=round(segment.no_speech_prob, 4),
                    )
                )  # fmt: skip
        cancel.raise_if_cancelled()
        return parts


def join_segments(segments: list[Segment]) -> str:
    return " ".join(s.text for s in segments)
