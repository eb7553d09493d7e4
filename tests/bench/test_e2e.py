"""``voicemesh bench e2e`` at its smallest, for real: vLLM (the session's), a region and an edge as
processes, the stock openai client, and a stock Pipecat pipeline in its own process.

The tests assert what the bench produced (every turn mode of both sides answered and gave every
figure, transcripts, a JSON file)
and that an interrupted bench leaves no process behind; never how fast anything was (a busy
2-core machine decides that, and the figures are the bench's own business).
"""

from __future__ import annotations

import json
import math
import signal
import sys
from pathlib import Path

import psutil

from voicemesh.bench.e2e import run_e2e
from voicemesh.bench.e2e_inputs import MODE_ORDER, E2eOptions
from voicemesh.bench.e2e_report import key
from voicemesh.processes import spawn, stop, wait_for_sync


async def test_smallest_run_has_every_mode_of_both_sides_and_ratios(
    llm_url: str, models: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "e2e.json"
    options = E2eOptions(
        llm_url=llm_url, callers=(1,), passes=1, utterances=1, warm_up=False, json_out=str(out),
        work_dir=str(tmp_path / "work"), max_output_tokens=20,  # a short answer: a shorter test
    )  # fmt: skip
    progress: list[str] = []
    result = await run_e2e(options, progress.append)

    [level] = result["levels"]
    assert level["callers"] == 1
    assert sorted(level["modes"]) == sorted(key(m) for m in MODE_ORDER)
    for name, figures in level["modes"].items():
        # One turn: a sentence with a thinking pause, "mm-hm" while its answer plays.
        assert (figures["turns"], figures["paused"]) == (1, 1), (name, result["samples"])
        assert 0 <= figures["cut"] <= 1 and 0 <= figures["backchannel_stops"] <= figures["backchannels"] <= 1
        assert math.isfinite(figures["wer"]) and figures["wer"] < 1, name
        assert math.isfinite(figures["silence_p50_s"]) and figures["silence_longest_s"] >= 0, name
        # A time to first audio unless the pause cut the sentence (then, by the rule, none).
        assert figures["answered"] + figures["cut"] == 1, (name, result["samples"])
        assert figures["answered"] == 0 or figures["p50_s"] > 0, name
    for sample in result["samples"]:
        # Every mode heard the sentence (Whisper base may mishear a word, never all of them) and answered.
        assert "table" in sample["transcript"].lower(), sample
        assert sample["answers"] and sample["reply_text"], sample
        assert sample["sentence_end_s"] > 0 and sample["backchannel_s"] is not None, sample
        assert sample["error"] == "", sample
    for row in ("| 1 | voicemesh | server_vad |", "| 1 | pipecat | vad_only |"):
        assert row in result["table"], result["table"]
    assert json.loads(out.read_text())["levels"] == result["levels"]
    for mode in MODE_ORDER:
        assert any(f" {mode}: " in line for line in progress), (mode, progress)


def test_interrupt_stops_every_process_it_started(
    llm_url: str, models: dict[str, Path], tmp_path: Path
) -> None:
    log = tmp_path / "bench.log"
    cmd = [sys.executable, "-m", "voicemesh.cli.main", "bench", "e2e", "--llm-url", llm_url,
           "--callers", "1", "--passes", "1", "--utterances", "1"]  # fmt: skip
    bench = spawn(cmd, log_path=log)
    try:
        me = psutil.Process(bench.pid)

        family: list[psutil.Process] = []

        def pipecat_running() -> None:
            family[:] = me.children(recursive=True)
            if not any("voicemesh.bench.e2e_pipecat" in " ".join(p.cmdline()) for p in family):
                raise RuntimeError("no Pipecat pass yet")

        # The warm-up's Pipecat pass runs once the region and the edge are up: all three exist then.
        wait_for_sync(
            pipecat_running, timeout_s=300, process=bench, log_path=log, what="the bench's Pipecat pass"
        )
        commands = [" ".join(p.cmdline()) for p in family]
        assert any("region serve" in c for c in commands) and any("edge serve" in c for c in commands)
        bench.send_signal(signal.SIGINT)
        assert bench.wait(timeout=120) != 0
        _, alive = psutil.wait_procs(family, timeout=30)
        assert [p for p in alive if p.status() != psutil.STATUS_ZOMBIE] == [], log.read_text()[-3000:]
        assert "interrupted" in log.read_text()
    finally:
        stop(bench)
