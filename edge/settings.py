"""The edge's settings: where it listens, who may connect, its models and its limits.

Plain frozen dataclasses; ``voicemesh/cli/edge.py`` builds them from the profile and the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class VadSettings:
    """Server VAD defaults (each session may change them with ``session.update``)."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500


@dataclass(frozen=True)
class LimitSettings:
    max_sessions_per_key: int = 50
    connect_rate_per_s: float = 5.0
    """Token bucket per key for new sessions and client secrets: refill rate..."""
    connect_burst: int = 20
    """...and burst allowance."""
    events_per_s: float = 200.0
    """Token bucket per session for client events (audio appends included)."""
    events_burst: int = 400
    max_event_bytes: int = 1 << 20
    max_buffer_s: float = 60.0
    """Longest input audio buffer (manual turns); server VAD trims silence as it goes."""
    max_session_s: float = 30 * 60.0
    max_history_messages: int = 40


@dataclass(frozen=True)
class EdgeSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    api_keys: tuple[str, ...] = ()
    jwt_secret: str | None = None
    """HS256 secret; when set, Bearer JWTs signed with it are accepted (``sub`` names the key)."""
    client_secret_ttl_s: int = 600
    vad_model: str = ""
    piper_model: str = ""
    hold_message: str = "Sorry, I can't answer that right now. Please try again in a moment."
    default_voice: str = ""
    default_instructions: str = "You are a helpful voice assistant. Answer briefly."
    store_url: str | None = None
    """``redis://...`` keeps sessions and client secrets in Redis (shared by edges); else memory."""
    vad: VadSettings = field(default_factory=VadSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    playback_lead_s: float = 0.4
    """How far ahead of real-time playback audio is sent: what was sent is (nearly) what was heard."""
