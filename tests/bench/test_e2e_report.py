"""``voicemesh bench e2e``'s figures: percentiles, ratios to Pipecat VAD-only, word error,
cut-mid-word, the targets, the markdown table."""

from __future__ import annotations

import math

from click.testing import CliRunner

from voicemesh.bench.e2e_inputs import MODE_ORDER, caller_order
from voicemesh.bench.e2e_report import (
    MODES,
    Sample,
    as_json,
    cut_mid_word,
    median_stages,
    misses,
    summarize,
    word_errors,
)
from voicemesh.bench.e2e_table import table
from voicemesh.cli.bench_e2e import E2E_MODES
from voicemesh.cli.common import bench


def _sample(
    mode: str, callers: int, ttfa: float | None, transcript: str = "what is the capital of france"
) -> Sample:
    """A plain turn whose one answer starts ``ttfa`` after the sentence ended at 2 s (no answer: None)."""
    answers = [] if ttfa is None else [[[2.0 + ttfa, 0.5], [2.5 + ttfa, 0.5]]]
    return Sample(
        side=MODES[mode], mode=mode, callers=callers, pass_no=0, caller=0, utterance=0,
        expected="What is the capital of France?", sentence_end_s=2.0, answers=answers,
        transcript=transcript, first_chunk_text="The capital", reply_text="The capital is Paris.",
    ).settle()  # fmt: skip


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


def test_ratios_are_to_pipecat_vad_only_per_level() -> None:
    samples = [_sample("server_vad", 1, t) for t in (0.5, 1.0, 1.5)]
    samples += [_sample("vad_only", 1, t) for t in (2.0, 4.0, 6.0)]
    samples += [_sample("smart_turn", 1, t) for t in (1.0, 2.0, 3.0)]
    samples += [_sample("server_vad", 2, 3.0), _sample("server_vad", 2, None)]
    samples += [_sample("vad_only", 2, 4.0, transcript="what is capital of france")]
    levels = summarize(samples)
    assert [lv.callers for lv in levels] == [1, 2]
    one = levels[0]
    assert list(one.modes) == ["voicemesh server_vad", "pipecat smart_turn", "pipecat vad_only"]
    assert one.modes["voicemesh server_vad"].p50_s == 1.0 and one.modes["pipecat vad_only"].p50_s == 4.0
    assert one.ratio("voicemesh server_vad", "p50_s") == 0.25
    assert math.isclose(one.ratio("voicemesh server_vad", "p95_s"), 1.45 / 5.8)
    assert one.ratio("pipecat smart_turn", "p50_s") == 0.5
    assert math.isnan(one.ratio("voicemesh semantic_vad", "p50_s"))  # not run: no ratio
    two = levels[1]
    assert (two.modes["voicemesh server_vad"].answered, two.modes["voicemesh server_vad"].turns) == (1, 2)
    assert math.isclose(two.modes["pipecat vad_only"].wer, 1 / 6)
    assert two.ratio("voicemesh server_vad", "p50_s") == 0.75
    # 0.25 <= 0.3 with one caller; 0.75 > 0.4 with two.
    assert misses(one, "voicemesh server_vad") == []
    assert misses(two, "voicemesh server_vad") == ["ttfa p50", "ttfa p95"]
    text = table(levels, samples, "voicemesh bench e2e --quick")
    assert "`voicemesh bench e2e --quick`" in text
    assert "| 1 | voicemesh | server_vad | 3/3 | 1.00 |" in text and "| met |" in text
    assert "| 2 | voicemesh | server_vad | 1/2 |" in text and "missed: ttfa p50, ttfa p95" in text
    out = as_json(levels, samples, table=text)
    assert out["levels"][0]["ratios"]["voicemesh server_vad"]["p50"] == 0.25
    assert out["levels"][1]["missed"]["voicemesh server_vad"] == ["ttfa p50", "ttfa p95"]
    assert len(out["samples"]) == len(samples)


def test_cut_backchannel_and_silence_targets() -> None:
    def turn(mode: str, *, early: bool, stopped: bool, gap: float) -> Sample:
        # A paused sentence ending at 5 s; the answer at 6 s (or already at 4.5 s: cut), with a gap
        # of ``gap`` before its second chunk; "yeah" at 7 s, a stop at 7.3 s if ``stopped``.
        first = 4.5 if early else 6.0
        return Sample(
            side=MODES[mode], mode=mode, callers=1, pass_no=0, caller=0, utterance=0, expected="x",
            paused=True, backchannel="yeah", sentence_end_s=5.0, backchannel_s=7.0,
            answers=[[[first, 1.0], [first + 1.0 + gap, 2.0]]], stops_s=[7.3] if stopped else [],
        ).settle()  # fmt: skip

    samples = [
        turn("server_vad", early=False, stopped=False, gap=0.0),
        turn("semantic_vad", early=True, stopped=True, gap=0.5),
        turn("smart_turn", early=False, stopped=True, gap=0.3),
        turn("vad_only", early=True, stopped=True, gap=0.3),
    ]
    assert [s.cut for s in samples] == [False, True, False, True]
    assert [s.backchannel_stopped for s in samples] == [False, True, True, True]
    assert samples[1].ttfa_s is None and samples[0].ttfa_s == 1.0  # a cut turn has no TTFA
    [lv] = summarize(samples)
    server, semantic = lv.modes["voicemesh server_vad"], lv.modes["voicemesh semantic_vad"]
    assert (server.cut, server.paused, server.backchannel_stops, server.backchannels) == (0, 1, 0, 1)
    assert (semantic.cut, semantic.backchannel_stops) == (1, 1)
    assert (semantic.silence_p50_s, semantic.silence_longest_s) == (0.5, 0.5)
    # No cut, no backchannel stop, no silence: it misses only the time target (1.0 / 1.0 > 0.3).
    assert misses(lv, "voicemesh server_vad") == ["ttfa p50", "ttfa p95"]
    assert misses(lv, "voicemesh semantic_vad")[:2] == ["cut", "backchannel"]
    assert "silence" in misses(lv, "voicemesh semantic_vad")  # 0.5 s > Pipecat's 0.3 s
    assert "| 1/1 | 1/1 |" in table([lv])


def test_callers_start_on_different_utterances() -> None:
    assert caller_order(0, 4) == [0, 1, 2, 3]
    assert caller_order(1, 4) == [1, 2, 3, 0]
    assert sorted(caller_order(3, 4)) == [0, 1, 2, 3]


def test_the_cli_offers_every_mode_in_the_benchs_order() -> None:
    assert E2E_MODES == MODE_ORDER and set(MODE_ORDER) == set(MODES)


def test_the_table_says_where_voicemeshs_time_went() -> None:
    samples = [_sample("server_vad", 1, t) for t in (1.0, 2.0, 3.0)] + [_sample("vad_only", 1, 4.0)]
    for s, region in zip(samples, (900.0, 1100.0, 2000.0), strict=False):
        s.stages_ms = {"eos": 512.0, "commit": 2.0, "region": region}
    samples[2].stages_ms["relay"] = 0.5  # a stage only some turns reached: the median of those
    assert median_stages(samples) == {"eos": 512.0, "commit": 2.0, "region": 1100.0, "relay": 0.5}
    text = table(summarize(samples), samples)
    assert "voicemesh stages, p50 ms: eos 512, commit 2, region 1100, relay 0" in text
    assert "stages" not in table(summarize(samples))  # without the samples, no stage line


def test_an_unknown_turn_mode_is_refused_with_the_choices() -> None:
    result = CliRunner().invoke(bench, ["e2e", "--modes", "server_vad,smart"])
    assert result.exit_code != 0
    assert "--modes" in result.output and "semantic_vad" in result.output and "vad_only" in result.output
