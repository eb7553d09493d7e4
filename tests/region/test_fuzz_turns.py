"""``voicemesh fuzz`` against a real region's turn protocol: malformed control frames, audio before
or without ``turn.start``, wrong sizes, bad tokens. Every bad input gets a client ``error`` (or a 401
at the handshake), nothing hangs or fails inside the region, and it still serves a text turn after.

The shared session region (real models); a fixed seed, so CI runs the same cases every time.
"""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.region import RunningRegion
from voicemesh.fuzz import RegionTarget, run

GUARD_S = 60.0
"""Only stops a hung region from hanging the suite (a turn that slips through runs the real LLM)."""


def test_the_fuzzer_finds_no_hang_nor_region_fault_in_the_turn_protocol(
    region: RunningRegion, region_keys: Path
) -> None:
    target = RegionTarget(region.url, region_keys)
    report = run(
        edge=None, region=target, fuzzers=("turns",), cases=80, seconds=3_600, seed=34, timeout_s=GUARD_S
    )
    assert report.ok, report.summary()
    assert report.outcomes[0].cases == 80, report.summary()
    assert region.alive
