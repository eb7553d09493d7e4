"""What a credential may do beyond its scopes: its residency, limits, voices and priority class.

Every ``Principal`` (``edge/tenancy/auth.py``) carries one. Keys from the environment get the edge's
defaults; keys stored as data (``edge/tenancy/keys.py``) and operator-signed JWTs carry their own. ``None``
in a field means "the edge's default" (or, for ``residency`` and ``voices``, "no restriction").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Priority = Literal["high", "normal", "low"]
"""Who waits in a region's queue: ``high`` before ``normal`` before ``low`` (FIFO within a class)."""
PRIORITIES: tuple[Priority, ...] = get_args(Priority)

NoRegion = Literal["edge_voice", "error"]
"""When no region of the key's residency can serve a turn: the edge's own voice answers, or the
response fails with an error. Never a region outside the residency."""


@dataclass(frozen=True, slots=True)
class KeyPolicy:
    residency: frozenset[str] | None = None
    """Region residency tags that may serve this key's turns (any of them); ``None``: anywhere."""
    max_sessions: int | None = None
    """Open sessions of this key across every edge; ``None``: ``LimitSettings.max_sessions_per_key``."""
    rate_per_s: float | None = None
    """Token bucket refill for this key's new sessions and requests, shared by every edge..."""
    burst: int | None = None
    """...and its burst; ``None``: ``LimitSettings.connect_rate_per_s`` / ``connect_burst``."""
    voices: frozenset[str] | None = None
    """Voice names this key may use; ``None``: every voice of the edge."""
    priority: Priority = "normal"
    on_no_region: NoRegion = "edge_voice"


DEFAULT_POLICY = KeyPolicy()


class InvalidPolicy(ValueError):
    """A policy field of the wrong type or out of range; the message names the field."""


def _tags(name: str, value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise InvalidPolicy(f"`{name}` must be a non-empty list of names")
    return frozenset(value)


def _positive(name: str, value: object, kind: type[int] | type[float]) -> int | float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise InvalidPolicy(f"`{name}` must be a positive number")
    if kind is int and not float(value).is_integer():
        raise InvalidPolicy(f"`{name}` must be a whole number")
    return kind(value)


def policy_from_claims(claims: dict[str, object]) -> KeyPolicy:
    """A ``KeyPolicy`` from a JSON object: an operator-signed JWT's claims or a stored key's fields
    (``residency``, ``max_sessions``, ``rate_per_s``, ``burst``, ``voices``, ``priority``,
    ``on_no_region``); absent fields keep the defaults. Raises ``InvalidPolicy``."""
    priority = claims.get("priority", "normal")
    if priority not in PRIORITIES:
        raise InvalidPolicy(f"`priority` must be one of {', '.join(PRIORITIES)}")
    on_no_region = claims.get("on_no_region", "edge_voice")
    if on_no_region not in get_args(NoRegion):
        raise InvalidPolicy("`on_no_region` must be edge_voice or error")
    max_sessions = _positive("max_sessions", claims.get("max_sessions"), int)
    burst = _positive("burst", claims.get("burst"), int)
    return KeyPolicy(
        residency=_tags("residency", claims.get("residency")),
        max_sessions=None if max_sessions is None else int(max_sessions),
        rate_per_s=_positive("rate_per_s", claims.get("rate_per_s"), float),
        burst=None if burst is None else int(burst),
        voices=_tags("voices", claims.get("voices")),
        priority=priority,
        on_no_region=on_no_region,  # type: ignore[arg-type]
    )


def policy_claims(policy: KeyPolicy) -> dict[str, object]:
    """``policy`` as JSON-ready fields (``policy_from_claims`` reads them back to the same policy):
    what a client secret minted by a JWT carries."""
    return {
        "residency": sorted(policy.residency) if policy.residency is not None else None,
        "max_sessions": policy.max_sessions,
        "rate_per_s": policy.rate_per_s,
        "burst": policy.burst,
        "voices": sorted(policy.voices) if policy.voices is not None else None,
        "priority": policy.priority,
        "on_no_region": policy.on_no_region,
    }
