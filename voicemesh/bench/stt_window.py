"""``voicemesh bench stt-window``: is Whisper as accurate on a shorter encoder window?

faster-whisper pads every turn to 30 s (3000 mel frames) and most of a short turn's transcription
is the encoder on that padding; ``SttSettings.window_frames`` (``region/whisper_window.py``) encodes
fewer frames. This bench says what that costs in words: every sentence of ``SENTENCES`` in each
of ``VOICES`` (espeak-ng), cut by the edge's own input path (``stt_cuts.committed_turn``: 24 kHz
appends, the real Silero and turn detector) at one or more start shifts, each cut transcribed with
every window asked for. The comparison is paired (the same cut, only the window differs), so the
turns where the windows disagree are counted either way, and a bootstrap over the cuts gives the
WER difference a 95 % interval.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from edge.audio.vad import VadBatcher
from region.cancel import CancelToken
from region.settings import SttSettings
from region.stt import Transcriber
from voicemesh.bench.e2e_inputs import PAD_S
from voicemesh.bench.e2e_report import word_errors
from voicemesh.bench.stt_cuts import committed_turn, shifted
from voicemesh.speech import espeak
from wire.audio import STT_RATE, pcm16_to_float

Report = Callable[[str], None]

SENTENCES: tuple[str, ...] = (
    # The e2e bench's six questions first, then what people ask voice assistants.
    "What is the capital of France?", "Tell me a fun fact about the moon.", "How do I boil an egg?",
    "Can you recommend a good book to read on a rainy weekend at home?",
    "Why is the sky blue during the day but red at sunset?",
    "What should I pack for a short trip to the mountains?",
    "Set a timer for ten minutes.", "What's the weather like tomorrow in London?",
    "Turn off the lights in the living room.", "How far is the nearest gas station?",
    "Play some relaxing music.", "What time does the pharmacy close today?",
    "Remind me to call my mother at six.", "How many ounces are in a cup?",
    "Who wrote the novel Pride and Prejudice?", "Translate good morning into Spanish.",
    "What is the square root of one hundred forty four?", "Book a table for two at eight tonight.",
    "How do you make a cup of green tea?", "What are the symptoms of a common cold?",
    "Can you spell the word necessary?", "How long does it take to fly to Tokyo?",
    "Is it going to rain this afternoon?", "Add milk and bread to my shopping list.",
    "What movies are playing near me tonight?", "Tell me a joke about computers.",
    "How tall is Mount Everest?", "What is the difference between weather and climate?",
    "Send a message to Anna saying I will be late.", "How do I reset my password?",
    "Where can I buy fresh fish in this city?", "Explain how a rainbow forms.",
    "What day of the week is Christmas this year?", "Give me a recipe for pancakes.",
    "How much water should I drink every day?", "Who won the world cup in two thousand eighteen?",
    "Open the garage door please.", "What is the population of Canada?",
    "How do plants make their food?", "Wake me up at seven tomorrow morning.",
)  # fmt: skip
VOICES: tuple[tuple[str, int], ...] = (("en-us", 165), ("en-gb", 150), ("en-us+f3", 160), ("en-029", 150))
"""(espeak-ng voice, words per minute)."""


@dataclass
class Cut:
    text: str
    voice: str
    shift_ms: float
    said: dict[int, str] = field(default_factory=dict)
    """Transcript per window (frames)."""
    errors: dict[int, int] = field(default_factory=dict)
    words: int = 0


@dataclass
class WindowResult:
    windows: tuple[int, int]
    cuts: list[Cut]

    def wer(self, window: int) -> float:
        return 100 * sum(c.errors[window] for c in self.cuts) / max(1, sum(c.words for c in self.cuts))

    def counts(self) -> tuple[int, int, int]:
        """(better, worse, same): cuts the second window heard better, worse, the same as the first."""
        a, b = self.windows
        better = sum(c.errors[b] < c.errors[a] for c in self.cuts)
        worse = sum(c.errors[b] > c.errors[a] for c in self.cuts)
        return better, worse, len(self.cuts) - better - worse

    def difference_interval(self, rounds: int = 5000, seed: int = 1) -> tuple[float, float, float]:
        """WER of the second window minus the first, in points, with a bootstrap 95 % interval over
        the cuts."""
        a, b = self.windows
        diffs = [c.errors[b] - c.errors[a] for c in self.cuts]
        words = [c.words for c in self.cuts]
        rng = random.Random(seed)
        n = len(self.cuts)
        draws = []
        for _ in range(rounds):
            picks = [rng.randrange(n) for _ in range(n)]
            draws.append(100 * sum(diffs[i] for i in picks) / max(1, sum(words[i] for i in picks)))
        draws.sort()
        return (
            100 * sum(diffs) / max(1, sum(words)),
            draws[int(0.025 * rounds)],
            draws[int(0.975 * rounds) - 1],
        )


async def run_stt_window(
    stt: SttSettings, vad_model: str, *, windows: tuple[int, int], sentences: int, voices: int,
    shifts: int, report: Report,
) -> WindowResult:  # fmt: skip
    """Cut every (sentence, voice, shift) once, then transcribe all cuts with each window."""
    batcher = VadBatcher(vad_model)
    cuts: list[tuple[Cut, np.ndarray]] = []
    try:
        pad = np.zeros(int(PAD_S * STT_RATE), dtype=np.float32)
        for n, text in enumerate(SENTENCES[:sentences], 1):
            for voice, wpm in VOICES[:voices]:
                spoken = await asyncio.to_thread(espeak, text, STT_RATE, voice=voice, speed=wpm)
                audio = np.concatenate([pad, spoken * 0.8, pad]).astype(np.float32)
                for k in range(shifts):
                    shift, late = shifted(audio, k, shifts)
                    pcm = await committed_turn(batcher, late)
                    cuts.append((Cut(text, voice, shift), pcm16_to_float(pcm)))
            if n % 10 == 0 or n == sentences:
                report(f"{len(cuts)} turns cut by the edge's VAD ({n}/{sentences} sentences)")
    finally:
        await batcher.aclose()
    for window in windows:
        transcriber = Transcriber(replace(stt, window_frames=window))
        report(f"loading Whisper ({window} frames)")
        await transcriber.load()
        for i, (cut, audio) in enumerate(cuts, 1):
            cut.said[window] = said = await transcriber.transcribe(audio, CancelToken())
            cut.errors[window], cut.words = word_errors(cut.text, said)
            if i % 40 == 0 or i == len(cuts):
                report(f"{window} frames: {i}/{len(cuts)} transcribed")
    return WindowResult(windows, [cut for cut, _ in cuts])


def format_window(result: WindowResult) -> str:
    a, b = result.windows
    lines = [f"{'text':50s} {'voice':9s} {a} frames / {b} frames (cuts where they differ)"]
    for c in result.cuts:
        if c.errors[a] != c.errors[b]:
            lines.append(f"  {c.text[:48]!r:50s} {c.voice:9s} {c.said[a]!r} / {c.said[b]!r}")
    better, worse, same = result.counts()
    diff, lo, hi = result.difference_interval()
    lines.append(
        f"{len(result.cuts)} cuts, {sum(c.words for c in result.cuts)} words: WER {result.wer(a):.1f} % "
        f"({a} frames) vs {result.wer(b):.1f} % ({b} frames); {b} frames heard {better} cuts better, "
        f"{worse} worse, {same} the same; difference {diff:+.2f} points "
        f"(95 % interval {lo:+.2f} to {hi:+.2f})"
    )
    return "\n".join(lines)


__all__ = ["SENTENCES", "VOICES", "WindowResult", "format_window", "run_stt_window"]
