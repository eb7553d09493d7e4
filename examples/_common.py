"""What the examples share: their command line, and WAV in and out as mono PCM16 at 24 kHz (what
OpenAI Realtime clients send and get)."""

from __future__ import annotations

import argparse
import os
import wave
from pathlib import Path

import numpy as np

RATE = 24_000
CHUNK = RATE * 40 // 1000 * 2
"""Bytes in 40 ms: what a microphone hands a client at a time."""


def parse_args(doc: str | None, url: str) -> argparse.Namespace:
    """``[QUESTION.wav] [OUT.wav] [--url URL] [--key KEY]`` (the key defaults to $VOICEMESH_API_KEY)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("question", nargs="?", help="a mono 16-bit WAV of a spoken question")
    parser.add_argument("out", nargs="?", default="answer.wav")
    parser.add_argument("--url", default=url)
    parser.add_argument("--key", default=os.environ.get("VOICEMESH_API_KEY"))
    return parser.parse_args()


def read_pcm24k(path: str | Path) -> bytes:
    """A mono 16-bit WAV at any rate (espeak-ng writes 22050 Hz), as 24 kHz PCM16, with 1 s of
    silence after it so the server's VAD hears the end of the turn."""
    with wave.open(str(path), "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise SystemExit(f"{path}: need a mono 16-bit WAV")
        rate, data = w.getframerate(), np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    n = int(len(data) * RATE / rate)
    samples = np.interp(np.linspace(0, len(data) - 1, n), np.arange(len(data)), data.astype(np.float32))
    return np.concatenate([samples, np.zeros(RATE, np.float32)]).astype("<i2").tobytes()


def write_pcm24k(path: str | Path, pcm: bytes) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm)
