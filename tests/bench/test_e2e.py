"""``voicemesh bench e2e`` at its smallest, for real: vLLM (the session's), a region and an edge as
processes, the stock openai client, and a stock Pipecat pipeline in its own process.

The tests assert what the bench produced (both sides answered, a ratio, transcripts, a JSON file)
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
from voicemesh.bench.e2e_inputs import E2eOptions
from voicemesh.processes import spawn, stop, wait_for_sync


async def test_smallest_run_has_both_sides_and_a_ratio(
    llm_url: str, models: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "e2e.json"
    options = E2eOptions(
        llm_url=llm_url, callers=(1,), passes=1, utterances=1, warm_up=False, json_out=str(out),
        work_dir=str(tmp_path / "work"),
    )  # fmt: skip
    progress: list[str] = []
    result = await run_e2e(options, progress.append)

    [level] = result["levels"]
    assert level["callers"] == 1
    for side in ("voicemesh", "pipecat"):
        figures = level["sides"][side]
        assert (figures["turns"], figures["answered"]) == (1, 1), (side, result["samples"])
        assert figures["p50_s"] > 0 and figures["p95_s"] >= figures["p50_s"]
    assert math.isfinite(level["ratio_p50"]) and level["ratio_p50"] > 0
    assert math.isfinite(level["ratio_p95"]) and level["ratio_p95"] > 0
    for sample in result["samples"]:
        # Both sides heard the question (Whisper base may mishear a word, never all of them).
        assert "capital" in sample["transcript"].lower(), sample
        assert sample["first_chunk_text"] and sample["reply_text"], sample
    [mine] = [s for s in result["samples"] if s["side"] == "voicemesh"]
    # The answer started at the pause in the speech (edge/realtime/speculation.py): no ``commit`` stage.
    assert list(mine["stages_ms"])[:2] == ["eos", "route"] and "first_audio" in mine["stages_ms"]
    assert "ratio" in result["table"] and "voicemesh stages, p50 ms: eos" in result["table"]
    assert json.loads(out.read_text())["levels"] == result["levels"]
    assert any("pipecat:" in line for line in progress) and any("voicemesh:" in line for line in progress)


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
