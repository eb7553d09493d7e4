"""Kokoro takes more threads only while nothing else runs in the region (``region.workload``): the
stages count their running work, and a clause started alone runs on the wide session.

The synthesiser is the real one (Kokoro int8): that its two sessions speak the same clause alike
is part of what is tested. Which work is "running" is set through the shared ``Workload``, as the
real STT and LLM clients set it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from region.cancel import CancelToken
from region.settings import TtsSettings
from region.streaming import StreamingPipeline
from region.testing import FixedTranscript, ScriptedLlm, ToneTts
from region.tts import Synthesizer
from region.turn_state import Stages, Turn
from region.workload import Workload
from wire.audio import FloatAudio
from wire.turn import TurnStart
from wire.voices import CustomVoice


def test_the_workload_is_idle_only_when_no_stage_runs() -> None:
    work = Workload()
    assert work.idle()
    with work.running("llm"):
        assert not work.idle()
        with work.running("stt"):
            assert not work.idle()
        assert not work.idle()
    assert work.idle()


def test_counts_name_every_stage_and_what_runs_in_it() -> None:
    work = Workload()
    assert work.counts() == {"stt": 0, "llm": 0, "end_of_turn": 0, "tts": 0, "batch": 0}
    with work.running("llm"), work.running("llm"), work.running("end_of_turn"):
        assert work.counts() == {"stt": 0, "llm": 2, "end_of_turn": 1, "tts": 0, "batch": 0}
    assert set(work.counts().values()) == {0}


async def test_a_clause_started_alone_runs_wide_and_sounds_the_same(models: dict[str, Path]) -> None:
    kokoro = models["kokoro-int8"]
    settings = TtsSettings(model=str(kokoro / "kokoro.onnx"), voices=str(kokoro / "voices.npz"))
    work = Workload()
    tts = Synthesizer(replace(settings, intra_op_threads=1, wide_intra_op_threads=2), work)
    await tts.load()
    loaded = tts.wide_clauses  # the warm-up clause ran alone
    alone = await tts.synthesize("Sure, to boil an egg,", "jf_alpha", CancelToken())
    assert tts.wide_clauses == loaded + 1
    with work.running("llm"):  # decoding beside it: one thread, which waits for no other
        beside = await tts.synthesize("Sure, to boil an egg,", "jf_alpha", CancelToken())
    assert tts.wide_clauses == loaded + 1
    assert len(alone) == len(beside)
    np.testing.assert_allclose(alone, beside, atol=1e-3)

    single = Synthesizer(settings, Workload())  # no wide threads set: one session, never wide
    await single.load()
    await single.synthesize("Hello.", "jf_alpha", CancelToken())
    assert single.wide_clauses == 0


class _IdleProbe(ToneTts):
    """A tone per clause, noting whether the region was idle as each began (what the real
    synthesiser asks before it takes its wide session)."""

    def __init__(self, work: Workload) -> None:
        super().__init__()
        self.work = work
        self.idle_at: list[bool] = []

    async def synthesize(
        self, text: str, voice: str | CustomVoice, cancel: CancelToken, *, speed: float = 1.0
    ) -> FloatAudio:
        self.idle_at.append(self.work.idle())
        return await super().synthesize(text, voice, cancel, speed=speed)


async def test_batch_work_never_finds_the_region_idle() -> None:
    # Stand-in models (what is tested is the pipeline's bookkeeping): a batch item's clauses run
    # with "batch" counted, so Kokoro keeps them to one thread; a live text turn's find it idle.
    work = Workload()
    tts = _IdleProbe(work)
    pipeline = StreamingPipeline(
        Stages(stt=FixedTranscript(), llm=ScriptedLlm("Hi there."), tts=tts, workload=work)
    )
    item = Turn(TurnStart(turn_id="b", speak_text="One. Two.", priority="batch"))
    live = Turn(TurnStart(turn_id="l", speak_text="One. Two."))
    for turn in (item, live):
        async for _ in pipeline.run(turn):
            pass
    assert tts.idle_at == [False, False, True, True]
    assert work.idle()
