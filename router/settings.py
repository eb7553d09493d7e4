"""Router knobs as one frozen dataclass (built by the CLI from flags/env, or by tests)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from router.registry import Location
from wire.region_auth import CA_ENV, KEYS_ENV


@dataclass(frozen=True, slots=True)
class RouterSettings:
    registry_path: str = ""
    """The registry file (JSON, see ``router.registry``); watched and reloaded on change."""
    registry_poll_s: float = 1.0
    location: Location = field(default_factory=lambda: Location(0.0, 0.0))
    """Where this edge is: before any measurement, nearer regions look faster."""

    # Region credentials (``wire.region_auth``): the edge signs a short-lived token per connection
    # and per probe with the newest key of this key set. Default: ``$VOICEMESH_REGION_KEYS``.
    region_keys_path: str = field(default_factory=lambda: os.environ.get(KEYS_ENV, ""))
    region_ca_path: str = field(default_factory=lambda: os.environ.get(CA_ENV, ""))
    """CA bundle (PEM) that ``https``/``wss`` region URLs are verified against; empty: system CAs."""

    # Health
    probe_interval_s: float = 1.0
    probe_timeout_s: float = 1.0
    probe_timeouts_to_suspect: int = 2
    """Consecutive probes without an answer in time before a region is taken for hung (left by new
    turns, its silent turns failed over after ``hang_confirm_s``): on a busy machine one probe may
    come late from a healthy region. A refused connection or a bad answer counts at once."""
    latency_tau_s: float = 10.0
    """Time constant of the latency EWMAs: a sample ``tau`` old weighs ``1/e`` of a fresh one."""
    prior_ttfa_s: float = 2.0
    """Assumed time to first audio of a region never measured (plus its distance)."""
    failure_penalty_s: float = 5.0
    """Added to the score per recent failure, so a region that fails fast never looks fast."""
    penalty_tau_s: float = 30.0
    turn_duration_prior_s: float = 4.0
    """Assumed slot time of a turn, to turn a queue depth into an expected wait."""

    # Deadlines: derived from the region's own latency, never one long generic timeout.
    first_byte_floor_s: float = 0.75
    first_byte_factor: float = 4.0
    first_audio_floor_s: float = 3.0
    first_audio_factor: float = 3.0
    stall_floor_s: float = 2.0
    """Shortest allowed silence between two audio clauses once the region has started answering."""
    stall_factor: float = 3.0
    synth_s_per_char_prior: float = 0.12
    """Synthesis time per character before a region has been measured: Kokoro on a busy CPU core
    (measured 0.04-0.1); cautious, since a false stall fails a healthy region over."""
    max_clause_chars: int = 120
    connect_timeout_s: float = 2.0
    hang_confirm_s: float = 1.0
    """When a probe of a region fails, a turn that has heard nothing from it for this long fails
    over at once instead of waiting out its stall deadline (``last_resort_slack`` times longer on
    the last allowed region when the probe only timed out: ``RegionHealth.hang_cutoff``)."""

    # Breakers
    breaker_fail_max: int = 3
    breaker_reset_s: float = 10.0
    redis_url: str | None = None
    """``redis://...`` shares breaker state between edge replicas; ``None`` keeps it in memory."""
    redis_namespace: str = "voicemesh"

    last_resort_slack: float = 3.0
    """Deadlines are this many times longer when no other allowed region is left: failing over
    would only mean the edge's apology, so a slow region is better than none. A region whose probe
    is refused (its process is gone) is still left at once (``hang_confirm_s``)."""

    # Retries
    max_attempts: int = 3
    """Regions one turn may try (the first included)."""
    retry_budget_per_s: float = 2.0
    retry_budget_burst: float = 10.0
    """Failovers across all turns are drawn from a token bucket, so a storm cannot multiply load."""

    # Pool
    warm_regions: int = 2
    """Keep an idle connection to this many best regions (the chosen one and the runner-up)."""
    warm_hold_s: float = 120.0
    sticky_sessions_max: int = 100_000
    stickiness_s: float = 1.0
    """A session leaves its region when another one scores better by more than this (e.g. a queue)."""
    failover_log_size: int = 50
