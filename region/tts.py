"""Text to speech: Kokoro (kokoro-onnx) on onnxruntime, one clause at a time.

kokoro-onnx does the phonemizing, tokenizing, voice styles, trimming and pauses; we only hand it
a session whose ``run()`` uses a turn's ``RunOptions``, so cancelling a turn terminates the ONNX
run in flight instead of waiting for the clause to finish.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import onnxruntime as ort
from kokoro_onnx import Kokoro

from region.cancel import Cancelled, CancelToken
from region.protocols import choose_voice
from region.settings import TtsSettings
from region.voice_styles import StyleCache, check_custom
from region.workload import Workload
from wire.audio import REGION_OUT_RATE, FloatAudio, resample
from wire.errors import ModelMissing
from wire.voices import CustomVoice


class _TurnAwareSession:
    """Stands in for kokoro-onnx's ``InferenceSession``: each thread's runs use its current RunOptions,
    on the wide session (more threads) when the clause was started alone."""

    def __init__(self, session: ort.InferenceSession, wide: ort.InferenceSession | None) -> None:
        self._session = session
        self._wide = wide
        self._local = threading.local()

    @property
    def has_wide(self) -> bool:
        return self._wide is not None

    def use(self, options: ort.RunOptions | None, *, wide: bool = False) -> None:
        self._local.options = options
        self._local.wide = wide

    def run(self, output_names: Any, inputs: Any, run_options: ort.RunOptions | None = None) -> Any:
        session = (
            self._wide if self._wide is not None and getattr(self._local, "wide", False) else self._session
        )
        return session.run(output_names, inputs, run_options or getattr(self._local, "options", None))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class Synthesizer:
    """``TextToSpeech`` with Kokoro."""

    def __init__(self, settings: TtsSettings, workload: Workload | None = None) -> None:
        self.settings = settings
        self.workload = workload or Workload()
        self._kokoro: Kokoro | None = None
        self._session: _TurnAwareSession | None = None
        self.voices: frozenset[str] = frozenset()
        self.styles = StyleCache()
        self.wide_clauses = 0
        """Clauses started while nothing else ran, on the wide session (if there is one)."""

    @property
    def ready(self) -> bool:
        return self._kokoro is not None

    async def load(self) -> None:
        await asyncio.to_thread(self._load)
        await self.synthesize("Hello there.", "", CancelToken())  # warm-up: first run allocates

    def _load(self) -> None:
        s = self.settings

        def session(threads: int) -> ort.InferenceSession:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            return ort.InferenceSession(s.model, sess_options=options, providers=list(s.providers))

        try:
            narrow = session(s.intra_op_threads)
            wide = session(s.wide_intra_op_threads) if s.wide_intra_op_threads > s.intra_op_threads else None
            kokoro = Kokoro.from_session(narrow, s.voices)
        except Exception as exc:  # onnxruntime raises its own untyped errors for bad files
            raise ModelMissing(
                f"cannot load Kokoro from {s.model} / {s.voices}: {exc}; run `voicemesh models fetch`"
            ) from exc
        self._session = _TurnAwareSession(narrow, wide)
        kokoro.sess = self._session
        self.voices = frozenset(kokoro.get_voices())
        self._kokoro = kokoro

    def resolve_voice(self, voice: str | CustomVoice) -> str:
        if isinstance(voice, CustomVoice):
            check_custom(voice, self.voices)
            return voice.id
        return choose_voice(voice, self.settings.default_voice, self.voices)

    async def synthesize(
        self, text: str, voice: str | CustomVoice, cancel: CancelToken, *, speed: float = 1.0
    ) -> FloatAudio:
        """One clause -> float audio at 24 kHz (empty if nothing in it is speakable).
        Raises ``Cancelled`` within milliseconds of a cancel."""
        name = self.resolve_voice(voice)
        style: str | np.ndarray = name
        if isinstance(voice, CustomVoice):
            # On the event loop, not in the worker thread: the cache is not shared across threads,
            # and a style costs about a millisecond (a blend of <= 8 arrays, or one base64 decode).
            assert self._kokoro is not None, "Synthesizer.load() first"
            style = self.styles.style(voice, self._kokoro.get_voice_style)
        # The wide session exists only when the settings give it more threads (``_load``).
        wide = self._session is not None and self._session.has_wide and self.workload.idle()
        self.wide_clauses += wide  # nothing else runs here: the clause may take every thread
        with self.workload.running("tts"):
            return await asyncio.to_thread(self._run, text, style, cancel, speed, wide)

    def _run(
        self, text: str, style: str | np.ndarray, cancel: CancelToken, speed: float, wide: bool = False
    ) -> FloatAudio:
        """``style``: a voice's name, or a custom voice's computed style."""
        assert self._kokoro is not None and self._session is not None, "Synthesizer.load() first"
        s = self.settings
        with cancel.onnx_run() as options:
            cancel.raise_if_cancelled()
            self._session.use(options, wide=wide)
            try:
                audio, rate = self._kokoro.create(text, voice=style, speed=s.speed * speed, lang=s.lang)
            except Exception as exc:
                if cancel.cancelled:
                    raise Cancelled from None  # onnxruntime's "Exiting due to terminate flag"
                if isinstance(exc, ValueError) and "phonemes" in str(exc):
                    return np.zeros(0, dtype=np.float32)  # nothing speakable ("***", an emoji): silence
                raise
            finally:
                self._session.use(None)
        return resample(np.asarray(audio, dtype=np.float32), rate, REGION_OUT_RATE)
