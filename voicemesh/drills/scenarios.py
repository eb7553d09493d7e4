"""The drills: what fault each one injects, on which region, and at which moment of a turn.

Every fault fires at a moment of a turn (by default when the first words of turn ``at_turn``'s
answer reach a caller, i.e. mid-answer), lasts ``hold_s``, and is undone; ``Undo`` guarantees the undo
also runs when the drill is interrupted. The faults are ``voicemesh/drills/region_faults.py``,
``voicemesh/drills/edge_faults.py`` and ``voicemesh/drills/llm_faults.py``; what they see,
``voicemesh/drills/drill_context.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from voicemesh.drills.drill_context import Inject
from voicemesh.drills.edge_faults import crash_edge, drain_edges, redis_down
from voicemesh.drills.llm_faults import crash_llm
from voicemesh.drills.records import TurnRecord
from voicemesh.drills.region_faults import (
    all_regions_down,
    crash_region,
    flap_region,
    hang_region,
    saturate_regions,
    slow_region,
)
from voicemesh.drills.slo import Slo, Verdict


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    inject: Inject
    needs_proxies: bool = False
    callers_over_capacity: int | None = None
    """region-saturated: callers = every region's capacity summed + this (overrides --callers)."""
    answer_sentences: int = 0
    """Callers ask for answers of this many sentences (0: one short one): long enough that the fault,
    fired at an answer's first words, finds its LLM still writing (``llm-crash``: on a loaded machine
    one short sentence was all written by the time its first words were heard, and the kill hit a
    model with nothing left to do)."""
    tool_callers: int = 0
    """Callers that call a function every turn (``voicemesh/drills/tool_calls.py``); the report counts
    their calls lost and duplicated."""
    edges: int = 0
    """Edge drills: the runner starts this many edges of their own (sharing a Redis, behind a
    balancer; ``voicemesh/drills/edges.py``), and the callers resume their sessions when dropped."""
    barge_in_every: int = 0
    """Callers that call no function barge into every Nth answer (``CallerSettings.barge_in_every``)."""
    verdicts: Callable[[Sequence[TurnRecord], Slo], list[Verdict]] | None = None
    """Objectives of the scenario's own, beside every drill's."""
    report_extra: Callable[[], dict[str, Any]] | None = None
    """What the scenario adds to the report's settings (the chaos drill: its seed and schedule)."""


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "region-crash",
            "SIGKILL the busiest region mid-answer (one caller calls a function every turn);"
            " Terraform brings it back",
            crash_region,
            tool_callers=1,
        ),
        Scenario(
            "llm-crash",
            "SIGKILL the LLM (vLLM) of the region serving an answer, mid-answer (one caller calls a"
            " function every turn); Terraform restarts it, the regions warm it and say ready again",
            crash_llm,
            answer_sentences=5,
            tool_callers=1,
        ),
        Scenario("region-hang", "SIGSTOP the busiest region mid-answer, SIGCONT after hold_s", hang_region),
        Scenario(
            "region-slow", "a fault proxy adds latency in front of the busiest region", slow_region, True
        ),
        Scenario(
            "region-flap",
            "the busiest region goes down and up repeatedly (proxy refuses, cuts)",
            flap_region,
            True,
        ),
        Scenario(
            "all-regions-down",
            "every region refuses; the edge voice answers, then regions recover",
            all_regions_down,
            True,
        ),
        Scenario(
            "region-saturated",
            "more callers than capacity: queueing and overflow to another region",
            saturate_regions,
            callers_over_capacity=1,
        ),
        Scenario(
            "edge-crash",
            "SIGKILL the edge serving a caller mid-answer; callers resume on the other edge",
            crash_edge,
            edges=2,
        ),
        Scenario(
            "edge-drain",
            "rolling restart of every edge (SIGTERM: drain) while callers talk; they resume",
            drain_edges,
            edges=2,
        ),
        Scenario(
            "redis-down",
            "the session store's Redis dies mid-answer; sessions go on; after it is back an edge is"
            " killed and its callers resume",
            redis_down,
            edges=2,
        ),
    )
}
