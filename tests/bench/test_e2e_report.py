"""``voicemesh bench e2e``'s figures: percentiles, ratios, word error, cut-mid-word, the table."""

from __future__ import annotations

import math

from voicemesh.bench.e2e_inputs import caller_order
from voicemesh.bench.e2e_report import (
    Sample,
    as_json,
    cut_mid_word,
    median_stages,
    summarize,
    table,
    word_errors,
)


def _sample(
    side: str, callers: int, ttfa: float | None, transcript: str = "what is the capital of france"
) -> Sample:
    return Sample(
        side=side, callers=callers, pass_no=0, caller=0, utterance=0,
        expected="What is the capital of France?", ttfa_s=ttfa, transcript=transcript,
        first_chunk_text="The capital", reply_text="The capital is Paris.",
    )  # fmt: skip


def test_word_errors_count_substitutions_deletions_insertions() -> None:
    assert word_errors("What is the capital of France?", "what is the capital of france") == (0, 6)
    assert word_errors("What is the capital of France?", "what is a capital france") == (2, 6)
    assert word_errors("Tell me a fact.", "tell me a fun fact") == (1, 4)
    assert word_errors("Hi there.", "") == (2, 2)


def test_cut_mid_word() -> None:
    assert not cut_mid_word("The capital of France", "The capital of France is Paris.")
    assert not cut_mid_word("One day,", "One day, a cat sat.")
    assert cut_mid_word("The capi", "The capital of France is Paris.")
    assert not cut_mid_word("", "Anything.")


def test_summary_has_both_sides_and_ratios_per_level() -> None:
    samples = [_sample("voicemesh", 1, t) for t in (1.0, 2.0, 3.0)]
    samples += [_sample("pipecat", 1, t) for t in (2.0, 4.0, 6.0)]
    samples += [_sample("voicemesh", 2, 3.0), _sample("voicemesh", 2, None)]
    samples += [_sample("pipecat", 2, 4.0, transcript="what is capital of france")]
    levels = summarize(samples)
    assert [lv.callers for lv in levels] == [1, 2]
    one = levels[0]
    assert one.sides["voicemesh"].p50_s == 2.0 and one.sides["pipecat"].p50_s == 4.0
    assert one.ratio_p50 == 0.5
    assert math.isclose(one.ratio_p95, 2.9 / 5.8)
    two = levels[1]
    assert (two.sides["voicemesh"].answered, two.sides["voicemesh"].turns) == (1, 2)
    assert math.isclose(two.sides["pipecat"].wer, 1 / 6)
    assert two.ratio_p50 == 0.75
    text = table(levels)
    assert "ratio" in text and "0.50" in text and "target <= 0.5" in text and "target <= 0.6" in text
    out = as_json(levels, samples, table=text)
    assert out["levels"][0]["ratio_p50"] == 0.5 and len(out["samples"]) == len(samples)


def test_a_side_with_no_answers_gives_no_ratio() -> None:
    levels = summarize([_sample("voicemesh", 1, 1.0), _sample("pipecat", 1, None)])
    assert math.isnan(levels[0].ratio_p50)


def test_callers_start_on_different_utterances() -> None:
    assert caller_order(0, 4) == [0, 1, 2, 3]
    assert caller_order(1, 4) == [1, 2, 3, 0]
    assert sorted(caller_order(3, 4)) == [0, 1, 2, 3]


def test_the_table_says_where_voicemeshs_time_went() -> None:
    samples = [_sample("voicemesh", 1, t) for t in (1.0, 2.0, 3.0)] + [_sample("pipecat", 1, 4.0)]
    for s, region in zip(samples, (900.0, 1100.0, 2000.0), strict=False):
        s.stages_ms = {"eos": 512.0, "commit": 2.0, "region": region}
    samples[2].stages_ms["relay"] = 0.5  # a stage only some turns reached: the median of those
    assert median_stages(samples) == {"eos": 512.0, "commit": 2.0, "region": 1100.0, "relay": 0.5}
    text = table(summarize(samples), samples)
    assert "voicemesh stages, p50 ms: eos 512, commit 2, region 1100, relay 0" in text
    assert "stages" not in table(summarize(samples))  # without the samples, no stage line
