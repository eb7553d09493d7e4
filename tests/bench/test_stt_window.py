"""``voicemesh bench stt-window``: the paired comparison adds up (fast, on made-up cuts), and on the
real Silero and Whisper each cut is the edge's and is transcribed with both windows."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicemesh.bench.stt_window import Cut, WindowResult, format_window, run_stt_window
from voicemesh.profiles import cpu_profile


def _cut(a: int, b: int, words: int = 5) -> Cut:
    return Cut("x", "en-us", 0.0, said={3000: "a", 1500: "b"}, errors={3000: a, 1500: b}, words=words)


def test_paired_counts_and_interval() -> None:
    result = WindowResult((3000, 1500), [_cut(0, 1), _cut(1, 0), _cut(2, 2), _cut(0, 0), _cut(0, 2)])
    assert result.counts() == (1, 2, 2)  # better, worse, same (the second window against the first)
    assert result.wer(3000) == pytest.approx(100 * 3 / 25) and result.wer(1500) == pytest.approx(100 * 5 / 25)
    diff, lo, hi = result.difference_interval(rounds=2000)
    assert diff == pytest.approx(8.0) and lo <= diff <= hi
    same = WindowResult((3000, 1500), [_cut(1, 1), _cut(0, 0)])
    assert same.difference_interval(rounds=200) == (0.0, 0.0, 0.0)
    report = format_window(result)
    assert report.splitlines()[-1].startswith("5 cuts, 25 words: WER 12.0 % (3000 frames) vs 20.0 %")
    assert len(report.splitlines()) == 2 + 3  # header, the three cuts that differ, the summary


async def test_each_cut_is_transcribed_with_both_windows(models: dict[str, Path]) -> None:
    p = cpu_profile()
    said: list[str] = []
    result = await run_stt_window(
        p.stt, p.edge.vad_model, windows=(3000, 1500), sentences=1, voices=1, shifts=1, report=said.append
    )
    (cut,) = result.cuts
    assert cut.text == "What is the capital of France?" and cut.words == 6
    assert set(cut.said) == {3000, 1500}
    assert all("capital" in t.lower() for t in cut.said.values()), cut.said  # the cut holds the speech
    assert sum(result.counts()) == 1
    assert said[-1] == "1500 frames: 1/1 transcribed"
