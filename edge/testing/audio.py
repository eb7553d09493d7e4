"""Test audio at the client rate (24 kHz PCM16): a tone ``EnergyVad`` calls speech, silence, and the
loudness of what was heard."""

from __future__ import annotations

import numpy as np

from wire.audio import CLIENT_RATE, float_to_pcm16


def tone(seconds: float, *, hz: float = 440.0, amplitude: float = 0.3) -> bytes:
    """A sine at the client rate (24 kHz PCM16): loud enough for ``EnergyVad`` to call it speech."""
    t = np.arange(int(seconds * CLIENT_RATE), dtype=np.float32) / CLIENT_RATE
    return float_to_pcm16((amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32))


def silence(seconds: float) -> bytes:
    """Silence at the client rate (24 kHz PCM16)."""
    return bytes(2 * int(seconds * CLIENT_RATE))


def rms(pcm: bytes | bytearray) -> float:
    """RMS of PCM16 (0..1): 0 for silence or nothing."""
    samples = np.frombuffer(bytes(pcm), dtype=np.int16).astype(np.float32) / 32768
    return float(np.sqrt(np.mean(samples**2))) if len(samples) else 0.0
