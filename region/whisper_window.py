"""Whisper's encoder on part of its window when a turn fits in that part.

faster-whisper pads every turn's features with zeros to Whisper's 30 s window (3000 frames), and
the encoder runs on all of it: on two CPU cores that is ~0.85 s of the ~1.2 s it takes to transcribe
a 3 s question. The encoder's cost grows faster than its input (self-attention), so the first 1500
frames (15 s) take ~0.21 s. A turn whose features end within ``window_frames`` is encoded on those
only; a longer one gets the whole window as before. Windows fitted to each turn (its length plus
1-3 s) made Whisper base repeat the turn two or more times: 15 s keeps it to what it was trained
on. Measured in docs/benchmarks.md "Transcripts".
"""

from __future__ import annotations

from typing import Any

import ctranslate2
import numpy as np
from faster_whisper import WhisperModel

from region.settings import FULL_WINDOW_FRAMES


class WindowedWhisper(WhisperModel):  # type: ignore[misc]  # (faster-whisper is untyped)
    def __init__(self, *args: Any, window_frames: int = FULL_WINDOW_FRAMES, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.window_frames = window_frames

    def encode(self, features: np.ndarray) -> ctranslate2.StorageView:
        """As faster-whisper's, on the first ``window_frames`` when the rest is its zero padding
        (the features of real audio, silence included, are never exactly zero)."""
        n = self.window_frames
        if 0 < n < features.shape[-1] and not features[..., n:].any():
            features = features[..., :n]
        return super().encode(features)
