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
from region.tts import Synthesizer
from region.workload import Workload


def test_the_workload_is_idle_only_when_no_stage_runs() -> None:
    work = Workload()
    assert work.idle()
    with work.running("llm"):
        assert not work.idle()
        with work.running("stt"):
            assert not work.idle()
        assert not work.idle()
    assert work.idle()


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
