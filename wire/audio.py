"""Audio formats on the wire and the conversions between them.

Clients speak 24 kHz PCM16 (OpenAI Realtime), VAD and STT want 16 kHz, regions answer at 24 kHz.
Resampling goes through soxr (a maintained binding of the SoX resampler): it is band-limited, so
no aliasing reaches Whisper, and its streaming form keeps state across chunks.
"""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import numpy.typing as npt
import soxr

CLIENT_RATE = 24_000
STT_RATE = 16_000
REGION_OUT_RATE = 24_000

FloatAudio = npt.NDArray[np.float32]


def pcm16_to_float(pcm: bytes) -> FloatAudio:
    """Little-endian PCM16 bytes to float32 samples in [-1, 1]."""
    return np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0


def float_to_pcm16(samples: npt.ArrayLike) -> bytes:
    arr = np.clip(np.asarray(samples, dtype=np.float32), -1.0, 1.0)
    return (arr * 32767.0).astype("<i2").tobytes()


def resample(samples: FloatAudio, src_rate: int, dst_rate: int) -> FloatAudio:
    if src_rate == dst_rate:
        return samples
    out = soxr.resample(samples, src_rate, dst_rate, quality="HQ")
    return np.asarray(out, dtype=np.float32)


class Resampler:
    """Streaming resampler: feed chunks as they arrive, get continuous output."""

    def __init__(self, src_rate: int, dst_rate: int) -> None:
        self.src_rate = src_rate
        self.dst_rate = dst_rate
        self._stream = soxr.ResampleStream(src_rate, dst_rate, 1, dtype="float32", quality="HQ")

    def process(self, samples: FloatAudio, last: bool = False) -> FloatAudio:
        if self.src_rate == self.dst_rate:
            return samples
        return np.asarray(self._stream.resample_chunk(samples, last=last), dtype=np.float32)


def read_wav(path: str | Path) -> tuple[FloatAudio, int]:
    """Read a mono or stereo PCM16 WAV; stereo is averaged to mono."""
    with wave.open(str(path), "rb") as w:
        if w.getsampwidth() != 2:
            raise ValueError(f"{path}: only 16-bit PCM WAV is supported (got {8 * w.getsampwidth()}-bit)")
        rate = w.getframerate()
        channels = w.getnchannels()
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
    if channels > 1:
        data = data.reshape(-1, channels).mean(axis=1).astype(np.float32)
    return data, rate


def write_wav(path: str | Path, samples: npt.ArrayLike, rate: int) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(float_to_pcm16(samples))
