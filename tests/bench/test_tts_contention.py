"""``voicemesh bench tts-contention`` on the real Kokoro and the session's real vLLM: a row per
thread count, each with a time alone and one beside decoding. The figures themselves are the
benchmark's to print, not the test's to judge (no wall-clock bounds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicemesh.bench.tts_contention import run_tts_contention
from voicemesh.profiles import cpu_profile


async def test_a_row_per_thread_count_alone_and_beside_decoding(
    llm_url: str, models: dict[str, Path]
) -> None:
    p = cpu_profile()
    said: list[str] = []
    table = await run_tts_contention(p.tts, p.llm, llm_url, wide=2, rounds=1, report=said.append)
    header, *rows = table.splitlines()
    assert "beside decoding" in header
    assert [int(r.split()[0]) for r in rows] == [1, 2]
    for row in rows:
        alone, beside, ratio = (float(x) for x in row.split()[1:])
        assert alone > 0 and beside > 0 and ratio == pytest.approx(beside / alone, rel=0.05)
    assert said[-1] == "beside decoding: round 1/1"  # progress, state by state
