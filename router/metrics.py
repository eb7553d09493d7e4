"""Prometheus metrics of the router (on the default registry, served by the edge's /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

BREAKER_TRANSITIONS = Counter(
    "voicemesh_router_breaker_transitions_total",
    "Circuit breaker state changes seen by this router",
    ["region", "from_state", "to_state"],
)
BREAKER_STATE = Gauge(
    "voicemesh_router_breaker_state", "Breaker state per region: 0 closed, 1 half-open, 2 open", ["region"]
)
FAILOVERS = Counter(
    "voicemesh_router_failovers_total", "Turns moved to another region", ["from_region", "reason"]
)
DEGRADED = Counter("voicemesh_router_degraded_total", "Turns no allowed region could finish", ["reason"])
TURNS = Counter("voicemesh_router_turns_total", "Turn attempts sent to a region", ["region"])
TTFA = Histogram(
    "voicemesh_router_ttfa_seconds",
    "Time from turn start to the first audio, per region",
    ["region"],
    buckets=(0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0),
)
FAILOVER_GAP = Histogram(
    "voicemesh_router_failover_gap_seconds",
    "The silence a failover costs: a region's failure to the next region's first audio (text, for a"
    " text-only turn), per turn that failed over (router/failover.py)",
    buckets=(0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 13.0, 20.0),
)
STAGE_SECONDS = Histogram(
    "voicemesh_router_stage_seconds",
    "The router's own stages of a live turn (router/attempt.py, router/failover.py): `choose` (rank "
    "the regions, pass the breaker: the turn to Routed), `connect` (a pooled or new connection), "
    "`admission` (turn.start sent to the region's turn.admitted: its queue included)",
    ["stage"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
