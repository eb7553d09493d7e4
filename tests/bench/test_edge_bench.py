"""``voicemesh bench edge`` at its smallest, for real: edge processes (uvicorn, Litestar, the real
Silero) streamed into over loopback WebSockets, with server VAD and without, and Silero timed alone.
What is checked is that each part measured what it says (VAD ran, or did not), not how fast."""

from __future__ import annotations

from pathlib import Path

from edge.shared.settings import EdgeSettings
from voicemesh.bench.edge import run_bench
from voicemesh.profiles import cpu_profile

TREE = Path(__file__).resolve().parents[2]


async def test_streams_with_and_without_vad_and_silero_alone_add_up(models: dict[str, Path]) -> None:
    settings = EdgeSettings(
        api_keys=("bench-key",), admin_keys=("bench-key",), vad_model=cpu_profile().edge.vad_model
    )
    lines: list[str] = []
    results = await run_bench(
        settings, region_url=None, n_idle=0, n_streams=2, seconds=2, n_turns=0, report=lambda _: None,
        out=lines.append, chunk_sizes=(40,),
    )  # fmt: skip
    with_vad, without = results["streams_40ms"], results["streams_40ms_no_vad"]
    assert with_vad["vad_chunks"] >= 2 * 2000 // 32 - 4  # every stream's audio went through Silero
    overloaded = results["streams_40ms_overloaded"]
    assert overloaded["streams"] == 3 and overloaded["vad_chunks"] >= 3 * 2000 // 32 - 6
    assert any(line.startswith("overloaded, 3 streams") and "streams per core" in line for line in lines)
    assert without["vad_chunks"] == 0  # turn detection off: no chunk did
    assert with_vad["cpu_ms_per_stream_s"] > 0 and without["cpu_ms_per_stream_s"] > 0
    model = results["silero_alone"]
    assert model["batch"] >= 1 and model["us_per_chunk"] > 0
    split = lines[-1]
    assert split.startswith("40 ms appends, ms CPU per stream-second:") and "+ Silero" in split


async def test_two_checkouts_side_by_side_each_measured(models: dict[str, Path]) -> None:
    """``bench edge-pair`` with this tree as both sides: both edges ran, each its own streams through
    its VAD, and their ratio is printed. Its value is not asserted: on a busy machine one round of
    two idle-ish edges can differ by any factor (a CI run saw one outside 0.2-5)."""
    from voicemesh.bench.edge_pair import bench_pair

    settings = EdgeSettings(
        api_keys=("bench-key",), admin_keys=("bench-key",), vad_model=cpu_profile().edge.vad_model
    )
    lines: list[str] = []
    result = await bench_pair(
        settings, TREE, TREE, n=2, seconds=2, rounds=1, report=lambda _: None, out=lines.append
    )
    assert len(result.cost_a) == len(result.cost_b) == 1
    assert result.cost_a[0] > 0 and result.cost_b[0] > 0
    assert len(lines) == 1 and lines[0].startswith("round 1/1:") and "b/a" in lines[0]
    assert result.ratios == [result.cost_b[0] / result.cost_a[0]]
    assert f"b/a {result.ratios[0]:.3f}" in lines[0]
