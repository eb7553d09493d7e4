"""Real speech for the tools: espeak-ng saying a sentence, as float samples at the rate asked for.

The benches and the drills' callers speak to the tiers with it (a voice unlike any the regions
speak, so nothing is an echo of the system's own output).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from wire.audio import FloatAudio, read_wav, resample
from wire.errors import VoicemeshError


def espeak(text: str, rate: int, *, voice: str | None = None, speed: int | None = None) -> FloatAudio:
    """``text`` spoken by espeak-ng (``voice``, ``speed`` words per minute: its defaults if not
    given), resampled to ``rate``; blocking, so async callers run it in a thread."""
    if shutil.which("espeak-ng") is None:
        raise VoicemeshError("espeak-ng is missing: run `make setup` (it installs the system packages)")
    args = [*(["-v", voice] if voice else []), *(["-s", str(speed)] if speed else [])]
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        done = subprocess.run(["espeak-ng", *args, "-w", str(wav), text], capture_output=True, check=False)
        if done.returncode != 0:
            raise VoicemeshError(f"espeak-ng failed for voice {voice!r}: {done.stderr.decode().strip()}")
        samples, src_rate = read_wav(wav)
    return resample(samples, src_rate, rate)
