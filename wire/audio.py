"""Audio formats on the wire and the conversions between them.

Clients speak 24 kHz PCM16 (OpenAI Realtime) or 8 kHz G.711 (telephony), VAD and STT want 16 kHz,
regions answer at 24 kHz. Resampling goes through soxr (a maintained binding of the SoX resampler):
it is band-limited, so no aliasing reaches Whisper, and its streaming form keeps state across chunks.

G.711 (mu-law and A-law, ITU-T G.711) is table lookup: 256 codes -> PCM16 to decode, 65536 PCM16
values -> codes to encode, both tables built once with the standard segment math (the reference
``g711.c`` that ``audioop`` also uses; ``audioop`` itself is gone in Python 3.13).
"""

from __future__ import annotations

import wave
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
import soxr

CLIENT_RATE = 24_000
STT_RATE = 16_000
REGION_OUT_RATE = 24_000
G711_RATE = 8_000

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


_ALL_PCM16 = np.arange(65536, dtype=np.uint16).view(np.int16).astype(np.int32)
"""Every PCM16 value, in the order of its unsigned view: what the encode tables are indexed by."""


def _ulaw_decode_table() -> npt.NDArray[np.int16]:
    u = ~np.arange(256, dtype=np.int32) & 0xFF
    t = (((u & 0x0F) << 3) + 0x84) << ((u & 0x70) >> 4)
    return np.where(u & 0x80, 0x84 - t, t - 0x84).astype(np.int16)


def _ulaw_encode_table() -> npt.NDArray[np.uint8]:
    pcm = _ALL_PCM16 >> 2  # 14-bit, as G.711 mu-law is defined
    sign = np.where(pcm < 0, 0x80, 0x00)  # (inverted below: negative codes are 0x00..0x7F)
    # Bias so each segment starts at a power of 2; clip so overload gets segment 7's top code.
    mag = np.minimum(np.abs(pcm), 8158) + 0x21
    seg = np.floor(np.log2(mag)).astype(np.int32) - 5  # 0x21..0x3F is segment 0
    code = np.asarray(sign | (seg << 4) | ((mag >> (seg + 1)) & 0x0F))
    return (~code & 0xFF).astype(np.uint8)  # G.711 sends mu-law inverted


def _alaw_decode_table() -> npt.NDArray[np.int16]:
    a = np.arange(256, dtype=np.int32) ^ 0x55  # even bits are sent inverted
    seg = (a & 0x70) >> 4
    t = ((a & 0x0F) << 4) + np.where(seg == 0, 8, 0x108)
    t = np.where(seg > 1, t << np.maximum(seg - 1, 0), t)
    return np.where(a & 0x80, t, -t).astype(np.int16)


def _alaw_encode_table() -> npt.NDArray[np.uint8]:
    pcm = _ALL_PCM16 >> 3  # 13-bit, as G.711 A-law is defined
    mask = np.where(pcm >= 0, 0xD5, 0x55)
    mag = np.where(pcm >= 0, pcm, -pcm - 1)
    seg = np.maximum(np.floor(np.log2(np.maximum(mag, 1))).astype(np.int32) - 4, 0)  # below 32: segment 0
    mantissa = np.where(seg < 2, mag >> 1, mag >> np.maximum(seg, 1)) & 0x0F
    return (((seg << 4) | mantissa) ^ mask).astype(np.uint8)


ULAW_TO_PCM16 = _ulaw_decode_table()
ALAW_TO_PCM16 = _alaw_decode_table()
PCM16_TO_ULAW = _ulaw_encode_table()
"""Indexed by a PCM16 sample viewed as unsigned (``pcm.view(np.uint16)``)."""
PCM16_TO_ALAW = _alaw_encode_table()
"""Indexed by a PCM16 sample viewed as unsigned (``pcm.view(np.uint16)``)."""

G711Law = Literal["ulaw", "alaw"]
_DECODE = {"ulaw": ULAW_TO_PCM16, "alaw": ALAW_TO_PCM16}
_ENCODE = {"ulaw": PCM16_TO_ULAW, "alaw": PCM16_TO_ALAW}


def g711_to_float(data: bytes, law: G711Law) -> FloatAudio:
    """G.711 bytes (one 8-bit code per sample) to float32 samples in [-1, 1]."""
    return _DECODE[law][np.frombuffer(data, dtype=np.uint8)].astype(np.float32) / 32768.0


def float_to_g711(samples: npt.ArrayLike, law: G711Law) -> bytes:
    """Float samples (clipped to [-1, 1]) to G.711 bytes."""
    pcm = np.frombuffer(float_to_pcm16(samples), dtype="<i2")
    return _ENCODE[law][pcm.view(np.uint16)].tobytes()


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
