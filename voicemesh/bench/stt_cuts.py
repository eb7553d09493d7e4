"""``voicemesh bench stt-cuts``: how much of the transcript depends on where the edge cuts a turn.

Each of the e2e bench's utterances is streamed, as a client would (24 kHz PCM16, 40 ms appends),
into the edge's own input path (``InputTurns`` with the real batched Silero and its turn detector),
with its start shifted by a few milliseconds each time; the turn it commits is transcribed as the
region does (``Transcriber``, the profile's Whisper settings). The shift moves the cut within
Silero's 32 ms chunk grid and the resampler's phase, nothing else: same words, same voice. A
transcript that changes with it is Whisper's sensitivity to the cut, which any pipeline with a VAD
has (Pipecat's too), not a fault of the audio path.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from edge.audio.turn_audio import TurnAudio
from edge.audio.vad import VadBatcher
from edge.realtime.input_turns import InputTurns
from edge.shared.settings import VadSettings
from edge.shared.state import TurnDetection
from region.cancel import CancelToken
from region.settings import SttSettings
from region.stt import Transcriber
from voicemesh.bench.e2e_inputs import make_utterances
from voicemesh.bench.e2e_report import word_errors
from wire.audio import CLIENT_RATE, STT_RATE, float_to_pcm16, pcm16_to_float, resample

Report = Callable[[str], None]
APPEND_MS = 40


@dataclass
class CutRow:
    text: str
    shifts_ms: list[float] = field(default_factory=list)
    transcripts: list[str] = field(default_factory=list)
    """Of the turn the edge committed, one per shift."""
    whole: list[str] = field(default_factory=list)
    """Of the same shifted audio, whole (no VAD, no resampling): what the cut is compared with."""


def wer(pairs: list[tuple[str, str]]) -> float:
    """Word errors over words, over (spoken text, transcript) pairs."""
    errors = [word_errors(text, said) for text, said in pairs]
    return sum(e for e, _ in errors) / max(1, sum(n for _, n in errors))


class NoTurn(RuntimeError):
    """The edge's VAD heard no speech in the audio (it committed no turn)."""


class _Committed:
    """The slice of ``Conversation`` that ``InputTurns`` writes a committed turn to."""

    def __init__(self) -> None:
        self.last_item_id: str | None = None
        self.audio: list[bytes] = []

    async def add_user_audio(self, item_id: str, audio: TurnAudio) -> None:
        self.last_item_id = item_id
        self.audio.append(audio.pcm16k())


async def _nothing(*_: object) -> None:
    return None


def shifted(audio16: np.ndarray, k: int, shifts: int) -> tuple[float, np.ndarray]:
    """Shift ``k`` of ``shifts`` spread over one 32 ms VAD chunk: (its ms, the audio started that late)."""
    shift = 32 * k / shifts
    lead = np.zeros(round(shift * STT_RATE / 1000), np.float32)
    return shift, np.concatenate([lead, audio16]).astype(np.float32)


async def committed_turn(batcher: VadBatcher, audio16: np.ndarray) -> bytes:
    """The turn the edge commits for ``audio16`` (16 kHz float), streamed as a client would."""
    vad = VadSettings()
    detection = TurnDetection(
        threshold=vad.threshold, prefix_padding_ms=vad.prefix_padding_ms,
        silence_duration_ms=vad.silence_duration_ms,
    )  # fmt: skip
    committed = _Committed()
    turns = InputTurns(
        batcher.stream(), detection, committed, _nothing,  # type: ignore[arg-type]
        max_buffer_s=60, on_speech_started=lambda: None, on_turn_end=_nothing,
        on_pause=lambda _audio: None, pause_ms=vad.speculate_after_ms,
    )  # fmt: skip
    tail = np.zeros(STT_RATE, dtype=np.float32)  # a second of silence: the window ends the turn
    pcm = float_to_pcm16(resample(np.concatenate([audio16, tail]), STT_RATE, CLIENT_RATE))
    step = CLIENT_RATE * APPEND_MS // 1000 * 2
    for i in range(0, len(pcm), step):
        await turns.append_audio(pcm[i : i + step])
        if committed.audio:
            return committed.audio[0]
    raise NoTurn(f"no turn was committed for a {len(audio16) / STT_RATE:.1f} s utterance")


async def run_stt_cuts(
    stt: SttSettings, vad_model: str, *, utterances: int, shifts: int, report: Report
) -> list[CutRow]:
    """``shifts`` start offsets spread over one 32 ms VAD chunk, per utterance."""
    transcriber = Transcriber(stt)
    report("loading Whisper and Silero")
    await transcriber.load()
    batcher = VadBatcher(vad_model)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            spoken = make_utterances(utterances, Path(tmp))
        for n, utt in enumerate(spoken, 1):
            row = CutRow(utt.text)
            for k in range(shifts):
                shift, audio = shifted(utt.audio16, k, shifts)
                pcm = await committed_turn(batcher, audio)
                row.shifts_ms.append(shift)
                row.transcripts.append(await transcriber.transcribe(pcm16_to_float(pcm), CancelToken()))
                row.whole.append(await transcriber.transcribe(audio, CancelToken()))
            report(f"utterance {n}/{len(spoken)}: {len(set(row.transcripts))} distinct transcripts")
            rows.append(row)
    finally:
        await batcher.aclose()
    return rows


def format_cuts(rows: list[CutRow]) -> str:
    lines = []
    for row in rows:
        lines.append(f"{row.text!r}, {len(row.transcripts)} shifts:")
        for name, said in (("edge's cut", row.transcripts), ("whole", row.whole)):
            lines.append(f"  {name}: WER {100 * wer([(row.text, t) for t in said]):.1f} %")
            lines += [f"    {count:3d} x {t!r}" for t, count in Counter(said).most_common()]
    cut = wer([(r.text, t) for r in rows for t in r.transcripts])
    whole = wer([(r.text, t) for r in rows for t in r.whole])
    lines.append(f"all: WER {100 * cut:.1f} % on the edge's cuts, {100 * whole:.1f} % on the whole audio")
    return "\n".join(lines)
