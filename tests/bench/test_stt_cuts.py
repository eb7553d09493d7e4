"""``voicemesh bench stt-cuts`` on the real Silero and Whisper: each shift gives a turn the edge's own
input path commits, transcribed beside the same audio whole. What the transcripts say is the
benchmark's to print; the test checks the cut holds the speech and the report adds up."""

from __future__ import annotations

from pathlib import Path

from voicemesh.bench.stt_cuts import format_cuts, run_stt_cuts
from voicemesh.profiles import cpu_profile


async def test_each_shift_is_cut_by_the_edge_and_transcribed_beside_the_whole(
    models: dict[str, Path],
) -> None:
    p = cpu_profile()
    said: list[str] = []
    (row,) = await run_stt_cuts(p.stt, p.edge.vad_model, utterances=1, shifts=2, report=said.append)
    assert row.shifts_ms == [0.0, 16.0]
    assert len(row.transcripts) == len(row.whole) == 2
    # The committed turn holds the speech: Whisper hears the question's words in it.
    assert all("capital" in t.lower() for t in row.transcripts), row.transcripts
    report = format_cuts([row])
    assert report.startswith("'What is the capital of France?', 2 shifts:")
    assert "edge's cut: WER" in report and "whole: WER" in report
    assert report.splitlines()[-1].startswith("all: WER")
    assert said[-1].startswith("utterance 1/1:")
