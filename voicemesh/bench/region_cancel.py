"""``voicemesh bench region``, part 3: how fast a cancel (barge-in) stops a real turn.

Each sample is one spoken turn on one warm connection to the region, cancelled at a chosen moment:

* ``answer``: right after the first audio clause arrives, while the LLM is still writing (the turn
  asks for 300 tokens) and Kokoro is speaking the next clause;
* ``stt``: right after ``turn.admitted``, while Whisper is transcribing.

For each it records the client's time from sending ``turn.cancel`` to ``turn.done`` (cancelled),
the region's own ``cancel_s`` (from the cancel to every stage task ended and any Kokoro ONNX run
returned), and, for ``answer``, the time until vLLM's ``/metrics`` shows no request running (the
LLM stream was closed, so vLLM aborted it). These are figures, not checks: the tests assert only
that a cancel stops the turn (``tests/region/test_turns.py``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import httpx
import msgspec
import numpy as np

from wire.client import ClauseAudio, RegionConnection
from wire.turn import TurnAdmitted, TurnDone, TurnStart

Report = Callable[[str], None]
Moment = Literal["answer", "stt"]

# Long enough that the LLM is still writing when the first clause has been spoken.
CANCEL_MAX_TOKENS = 300
_IDLE_WITHIN_S = 5.0
_IDLE_POLL_S = 0.02
_RUNNING = re.compile(r"vllm:num_requests_running\{[^}]*\} (\S+)")

_LABELS: dict[Moment, str] = {
    "answer": "during the answer (after 1st audio)",
    "stt": "during STT (after turn.admitted)",
}
# The stage that must still have been running at the cancel for the sample to count as "during" it.
_UNFINISHED: dict[Moment, str] = {"answer": "llm_s", "stt": "stt_s"}


@dataclass
class CancelSample:
    moment: Moment
    status: str
    client_s: float
    """From sending ``turn.cancel`` to ``turn.done`` arriving."""
    region_cancel_s: float | None
    """The region's ``cancel_s`` timing."""
    in_stage: bool
    """The stage named by the moment was still running when the cancel arrived."""
    llm_idle_s: float | None = None
    """From sending ``turn.cancel`` to vLLM running no request (None: not seen, or not measured)."""


async def measure_cancels(
    base_url: str,
    llm_url: str,
    start: TurnStart,
    pcm: bytes,
    n: int,
    *,
    stop: asyncio.Event,
    report: Report,
) -> list[CancelSample]:
    """``n`` cancels at each moment, alternating, on one connection (as the edge reuses its own)."""
    samples: list[CancelSample] = []
    conn = await RegionConnection.open(base_url, region="bench")
    try:
        for i in range(n):
            for moment in ("answer", "stt"):
                if stop.is_set():
                    return samples
                turn = msgspec.structs.replace(
                    start, turn_id=f"cancel-{moment}-{i}", max_output_tokens=CANCEL_MAX_TOKENS
                )
                sample = await _cancel_once(conn, turn, pcm, moment, llm_url)
                samples.append(sample)
                report(
                    f"cancel {i + 1}/{n} {moment}: turn.done after {sample.client_s * 1000:.1f} ms,"
                    f" region cancel_s {_ms(sample.region_cancel_s)}, vLLM idle {_ms(sample.llm_idle_s)}"
                )
    finally:
        await conn.close()
    return samples


async def _cancel_once(
    conn: RegionConnection, start: TurnStart, pcm: bytes, moment: Moment, llm_url: str
) -> CancelSample:
    await conn.start(start, pcm)
    sent = 0.0
    done: TurnDone | None = None
    async for ev in conn.events():
        at_moment = isinstance(ev, ClauseAudio) if moment == "answer" else isinstance(ev, TurnAdmitted)
        if at_moment and not sent:
            sent = time.perf_counter()
            await conn.cancel(start.turn_id)
        elif isinstance(ev, TurnDone):
            done = ev
    client_s = time.perf_counter() - sent if sent else 0.0
    if done is None:
        return CancelSample(moment, "error", client_s, None, in_stage=False)
    sample = CancelSample(
        moment,
        done.status,
        client_s,
        done.timings.get("cancel_s"),
        in_stage=_UNFINISHED[moment] not in done.timings,
    )
    if moment == "answer" and sent:
        sample.llm_idle_s = await _vllm_idle_after(llm_url, sent)
    return sample


async def _vllm_idle_after(llm_url: str, since: float) -> float | None:
    """Seconds from ``since`` until vLLM runs no request; None if not within 5 s or not readable.

    The vLLM may be shared: another client's request keeps it busy and makes this figure longer.
    """
    url = llm_url.rstrip("/").removesuffix("/v1") + "/metrics"
    async with httpx.AsyncClient(timeout=2.0) as http:
        while time.perf_counter() - since < _IDLE_WITHIN_S:
            try:
                m = _RUNNING.search((await http.get(url)).text)
            except httpx.HTTPError:
                return None
            if m is None:
                return None  # not a vLLM (or it renamed the metric): nothing to say
            if float(m.group(1)) == 0:
                return time.perf_counter() - since
            await asyncio.sleep(_IDLE_POLL_S)
    return None


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.1f} ms"


def _p50_max(values: list[float]) -> str:
    if not values:
        return f"{'-':>8}{'-':>8}"
    return f"{float(np.percentile(values, 50)) * 1000:>8.1f}{max(values) * 1000:>8.1f}"


def cancel_summary(samples: list[CancelSample]) -> list[str]:
    """The summary's cancel table: p50 and max in ms per moment; counts of what was checked."""
    lines = [
        f"Cancel (barge-in) on one connection, {CANCEL_MAX_TOKENS}-token answers, ms:",
        f"{'cancelled':<37}{'what':<25}{'p50':>8}{'max':>8}",
    ]
    for moment in ("answer", "stt"):
        got = [s for s in samples if s.moment == moment]
        if not got:
            continue
        ok = [s for s in got if s.status == "cancelled"]
        rows = [
            ("turn.cancel -> turn.done", [s.client_s for s in ok]),
            ("region cancel_s", [s.region_cancel_s for s in ok if s.region_cancel_s is not None]),
        ]
        if moment == "answer":
            rows.append(("turn.cancel -> vLLM idle", [s.llm_idle_s for s in ok if s.llm_idle_s is not None]))
        for i, (what, values) in enumerate(rows):
            label = _LABELS[moment] if i == 0 else ""
            lines.append(f"{label:<37}{what:<25}{_p50_max(values)}")
        in_stage = sum(s.in_stage for s in ok)
        notes = f"cancelled {len(ok)}/{len(got)}, {_UNFINISHED[moment]} not reached {in_stage}/{len(ok)}"
        if moment == "answer":
            idle = sum(s.llm_idle_s is not None for s in ok)
            notes += f", vLLM idle within {_IDLE_WITHIN_S:.0f} s: {idle}/{len(ok)}"
        lines.append(f"  ({notes})")
    return lines
