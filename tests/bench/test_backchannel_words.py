"""``voicemesh bench backchannel-words`` on the real Silero and Whisper: each clip is cut by the
edge's own input path and heard with the backchannel prompt and without, each round. What a hummed
"mm-hm" is heard as is the benchmark's to print (Whisper samples when it doubts its words, so it
varies); the test checks every clip is heard each round with each prompt, that a plain "Stop." stays
an interruption either way, and that the report adds up."""

from __future__ import annotations

from pathlib import Path

from edge.shared.settings import BackchannelSettings
from voicemesh.bench.backchannel_words import format_backchannel_words, run_backchannel_words
from voicemesh.profiles import cpu_profile


async def test_each_clip_is_cut_by_the_edge_and_heard_each_round_with_and_without_the_prompt(
    models: dict[str, Path],
) -> None:
    p = cpu_profile()
    said: list[str] = []
    prompt = BackchannelSettings().prompt
    tally = await run_backchannel_words(
        p.stt, p.edge.vad_model, voices=1, rounds=2, prompt=prompt, report=said.append,
        backchannels=("[[m@'h@m]]",), interruptions=("Stop.",),
    )  # fmt: skip
    hum, stop = tally.clips
    assert (hum.said, hum.voice, hum.backchannel) == ("[[m@'h@m]]", "en-us", True)
    assert all(len(c.heard[name]) == 2 for c in tally.clips for name in ("with", "without"))
    assert tally.right("with", False) == tally.right("without", False) == (2, 2), stop.heard
    assert stop.heard["with"] == ["Stop."] * 2, stop.heard
    report = format_backchannel_words(tally).splitlines()
    assert report[0] == f"2 clips, each heard 2 times; prompt {prompt!r}"
    b, nb = tally.right("without", True)
    assert (
        report[1]
        == f"without the prompt: backchannels let the answer go on {b}/{nb}, interruptions stop it 2/2"
    )
    assert sum(line.startswith("with the prompt:") for line in report) == 1
    assert said[-1] == "2/2 clips heard"
