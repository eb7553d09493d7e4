"""``voicemesh bench backchannel-words``: is short speech over an answer heard as a backchannel?

The edge lets an answer go on when the words of short speech over it are backchannel words
(``edge/realtime/backchannel.py``): Whisper's transcript decides. Hummed ones ("mm-hm") have no
words to hear, and Whisper base writes them as words they sound like ("Muffin.", "But um..."),
which stops the answer. Told what to expect (``BackchannelSettings.prompt``) it mostly writes
"Mm-hm."; the cost is a short interruption heard as one now and then. This measures both, side by
side: each clip (espeak-ng, several voices) goes through the edge's own VAD cut
(``stt_cuts.committed_turn``) and the region's Whisper as the gate asks it (a transcribe-only turn
without timestamps), with the prompt and without, ``rounds`` times, and the rule
(``is_backchannel``) judges the words. Rounds, because the outcome is not fixed: Whisper doubts its
words for such sounds (average log-probability below -1) and samples again at a higher temperature,
and the prompt is what those samples lean on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from edge.audio.vad import VadBatcher
from edge.realtime.backchannel_rules import is_backchannel
from edge.shared.settings import BackchannelSettings
from region.cancel import CancelToken
from region.settings import SttSettings
from region.stt import Transcriber, join_segments
from voicemesh.bench.stt_cuts import NoTurn, committed_turn
from voicemesh.speech import espeak
from wire.audio import STT_RATE, pcm16_to_float

Report = Callable[[str], None]

BACKCHANNELS = (
    "[[m@'h@m]]",
    "[[m'hm]]",
    "[[@'h@]]",
    "Mm-hmm.",
    "Uh-huh.",
    "Yeah.",
    "Right.",
    "Okay.",
    "I see.",
)
"""What a listener says without asking the answer to stop ("[[...]]": espeak-ng phonemes, hummed)."""
INTERRUPTIONS = (
    "No.", "No, no.", "Stop.", "Wait.", "Hold on.", "Hang on.", "Sorry?", "What?", "Really?",
    "Not that.", "But why?", "Go back.", "Hmm, no.", "Tell me more.",
)  # fmt: skip
"""Short speech that asks the answer to stop (shorter than the gate's bound, so its words decide)."""
VOICES = ("en-us", "en-gb", "en-us+f2", "en-029", "en-gb-scotland", "en-us+m3")
SPEED_WPM = 160
LEAD_S = 0.3


@dataclass
class Judged:
    said: str
    voice: str
    backchannel: bool
    """What it is."""
    heard: dict[str, list[str]] = field(default_factory=dict)
    """Per prompt name: Whisper's words, each round."""

    def wrong(self, name: str) -> list[str]:
        """The hearings, with prompt ``name``, that the gate would judge wrong."""
        words = BackchannelSettings().words
        return [said for said in self.heard[name] if is_backchannel(said, words) != self.backchannel]


@dataclass
class Tally:
    clips: list[Judged]
    prompts: dict[str, str]

    def right(self, name: str, backchannel: bool) -> tuple[int, int]:
        """(hearings judged right, hearings) of one kind of clip, with prompt ``name``."""
        kind = [c for c in self.clips if c.backchannel == backchannel]
        heard = sum(len(c.heard[name]) for c in kind)
        return heard - sum(len(c.wrong(name)) for c in kind), heard


async def run_backchannel_words(
    stt: SttSettings, vad_model: str, *, voices: int, rounds: int, prompt: str, report: Report,
    backchannels: tuple[str, ...] = BACKCHANNELS, interruptions: tuple[str, ...] = INTERRUPTIONS,
) -> Tally:  # fmt: skip
    """Each clip in the first ``voices`` of ``VOICES``, heard ``rounds`` times with ``prompt`` and
    without."""
    prompts = {"without": "", "with": prompt}
    transcriber = Transcriber(stt)
    report("loading Whisper and Silero")
    await transcriber.load()
    batcher = VadBatcher(vad_model)
    clips = [Judged(s, v, True) for s in backchannels for v in VOICES[:voices]]
    clips += [Judged(s, v, False) for s in interruptions for v in VOICES[:voices]]
    try:
        for n, clip in enumerate(clips, 1):
            spoken = await asyncio.to_thread(espeak, clip.said, STT_RATE, voice=clip.voice, speed=SPEED_WPM)
            lead = np.zeros(int(LEAD_S * STT_RATE), dtype=np.float32)
            try:
                pcm = await committed_turn(batcher, np.concatenate([lead, 0.8 * spoken]).astype(np.float32))
            except NoTurn:  # the VAD heard no speech: nothing would pause the answer either
                clip.heard = {name: [""] * rounds for name in prompts}
                continue
            audio = pcm16_to_float(pcm)
            for name, text in prompts.items():
                clip.heard[name] = [
                    join_segments(
                        await transcriber.transcribe_timed(
                            audio, CancelToken(), prompt=text, timestamps=False
                        )
                    )
                    for _ in range(rounds)
                ]
            if n % 10 == 0 or n == len(clips):
                report(f"{n}/{len(clips)} clips heard")
    finally:
        await batcher.aclose()
    return Tally(clips, prompts)


def format_backchannel_words(tally: Tally) -> str:
    rounds = max((len(h) for c in tally.clips for h in c.heard.values()), default=0)
    lines = [f"{len(tally.clips)} clips, each heard {rounds} times; prompt {tally.prompts['with']!r}"]
    for name in tally.prompts:
        (b, nb), (i, ni) = tally.right(name, True), tally.right(name, False)
        lines.append(
            f"{name} the prompt: backchannels let the answer go on {b}/{nb}, interruptions stop it {i}/{ni}"
        )
        lines += [
            f"    {c.said!r} ({c.voice}) heard as {', '.join(repr(w) for w in wrong)}"
            for c in tally.clips if (wrong := c.wrong(name))
        ]  # fmt: skip
    return "\n".join(lines)
