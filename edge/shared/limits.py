"""The edge's limits, enforced before any region is involved.

* Admission: concurrent sessions per key and per edge, and token-bucket rate limits per key (each
  key's own when its policy sets them, ``edge/shared/key_policy.py``; shared by every edge through Redis in
  ``edge/tenancy/shared_limits.py``).
* Content (``ContentLimits`` in ``edge/shared/settings.py``, each bound documented there): text and
  instruction sizes, voice names, ``max_output_tokens``, every numeric ``session.update`` field, and
  the history trimmed so that a turn fits the model's context.

A refusal is a ``ProtocolError`` naming the client's field (``InvalidParam.param``), which the
session answers with an ``error`` event: a client's mistake never reaches a region, where it would
cost a try on each one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from edge.shared.errors import InvalidParam, RateLimited, TooManySessions
from edge.shared.key_policy import DEFAULT_POLICY, KeyPolicy
from edge.shared.settings import ContentLimits, LimitSettings
from wire.rates import TokenBucket
from wire.turn import Message


def rate_of(policy: KeyPolicy, limits: LimitSettings) -> tuple[float, int]:
    """A key's connect bucket, ``(rate_per_s, burst)``: its policy's, else the edge's defaults."""
    return (policy.rate_per_s or limits.connect_rate_per_s, policy.burst or limits.connect_burst)


def session_cap_of(policy: KeyPolicy, limits: LimitSettings) -> int:
    return policy.max_sessions or limits.max_sessions_per_key


def rate_limited(rate_per_s: float) -> RateLimited:
    return RateLimited(f"too many requests for this key; retry in {1 / rate_per_s:.1f} s")


def too_many_sessions(active: int, cap: int, where: str = "") -> TooManySessions:
    return TooManySessions(
        f"this key already has {active} open sessions{where} (limit {cap}): close one first"
    )


class KeyLimits:
    """Admission per API key (or JWT subject, or the key a client secret was minted from), and for
    the whole edge, counted in this process (``edge/tenancy/shared_limits.py`` counts per key across edges,
    and falls back to this while Redis is down)."""

    def __init__(self, limits: LimitSettings) -> None:
        self._limits = limits
        self._active: dict[str, int] = defaultdict(int)
        self._total = 0
        self._buckets: dict[str, TokenBucket] = {}

    def bucket(self, key_id: str, policy: KeyPolicy = DEFAULT_POLICY) -> TokenBucket:
        rate, burst = rate_of(policy, self._limits)
        bucket = self._buckets.get(key_id)
        if bucket is None or (bucket.rate_per_s, bucket.burst) != (rate, burst):
            bucket = self._buckets[key_id] = TokenBucket(rate_per_s=rate, burst=burst)
        return bucket

    def check_rate(self, key_id: str, policy: KeyPolicy = DEFAULT_POLICY) -> None:
        bucket = self.bucket(key_id, policy)
        if not bucket.take():
            raise rate_limited(bucket.rate_per_s)

    def active(self, key_id: str) -> int:
        return self._active.get(key_id, 0)

    @property
    def total(self) -> int:
        """Open sessions of every key."""
        return self._total

    def acquire(self, key_id: str, policy: KeyPolicy = DEFAULT_POLICY, *, per_key: bool = True) -> None:
        """Take one of the key's session slots and one of the edge's (``release`` gives them back);
        ``per_key=False``: the key's cap is checked elsewhere (across edges), only counted here."""
        if self._total >= self._limits.max_sessions:
            raise TooManySessions(
                f"this edge is serving its limit of {self._limits.max_sessions} sessions: retry shortly",
                code="edge_session_limit_exceeded",
            )
        cap = session_cap_of(policy, self._limits)
        if per_key and self._active[key_id] >= cap:
            raise too_many_sessions(self._active[key_id], cap)
        self._active[key_id] += 1
        self._total += 1

    def release(self, key_id: str) -> None:
        self._total -= 1
        self._active[key_id] -= 1
        if self._active[key_id] <= 0:
            del self._active[key_id]


# -- content -------------------------------------------------------------------------------------


def check_text(text: str, param: str, limit: int) -> None:
    if len(text) > limit:
        raise InvalidParam(
            f"{param} has {len(text)} characters; the limit is {limit}", param=param, code="text_too_long"
        )


def check_range(
    value: float, param: str, lo: float, hi: float, *, open_lo: bool = False, open_hi: bool = False
) -> None:
    """``lo <= value <= hi`` (strict on a side marked open); NaN is never in range."""
    low_ok = value > lo if open_lo else value >= lo
    high_ok = value < hi if open_hi else value <= hi
    if not (low_ok and high_ok and math.isfinite(value)):
        span = f"{'(' if open_lo else '['}{lo}, {hi}{')' if open_hi else ']'}"
        raise InvalidParam(f"{param} must be in {span}, got {value}", param=param)


def output_tokens(value: int | Literal["inf"], limits: ContentLimits) -> int:
    """``session.max_output_tokens``: 1..``max_output_tokens``; ``"inf"`` is the cap."""
    if value == "inf":
        return limits.max_output_tokens
    check_range(value, "session.max_output_tokens", 1, limits.max_output_tokens)
    return value


def check_turn_detection(values: dict[str, Any], limits: ContentLimits) -> None:
    """The numeric ``turn_detection`` fields a client set (``None``: not set)."""
    bounds: dict[str, tuple[float, float, bool]] = {  # (lo, hi, open: both ends excluded)
        "threshold": (0.0, 1.0, True),
        "prefix_padding_ms": (0, limits.max_prefix_padding_ms, False),
        "silence_duration_ms": (limits.min_silence_duration_ms, limits.max_silence_duration_ms, False),
        "idle_timeout_ms": (0, limits.max_idle_timeout_ms, False),
    }
    for name, (lo, hi, open_) in bounds.items():
        value = values.get(name)
        if value is not None:
            param = f"session.audio.input.turn_detection.{name}"
            check_range(value, param, lo, hi, open_lo=open_, open_hi=open_)


def estimate_tokens(text: str) -> int:
    """A conservative token count: one per 3 UTF-8 bytes, plus 4 for the message's chat framing.

    BPE tokenizers average ~4 bytes per token on English and ~3 on CJK (3 bytes a character, about
    one token each), so this over-counts real text: a turn the edge lets through fits the context.
    """
    return -(-len(text.encode("utf-8", "surrogatepass")) // 3) + 4


def fit_history(
    history: Sequence[Message], *, fixed: Iterable[str], max_output_tokens: int, limits: ContentLimits
) -> list[Message]:
    """The newest messages of ``history`` that fit the context beside ``fixed`` (the instructions
    and the current turn, which always stay) and the answer; the oldest go first. Raises
    ``InvalidParam`` when even the fixed part does not fit."""
    budget = limits.context_tokens - limits.reserved_tokens - max_output_tokens
    budget -= sum(estimate_tokens(text) for text in fixed)
    if budget < 0:
        raise InvalidParam(
            f"instructions, this turn and max_output_tokens ({max_output_tokens}) need about "
            f"{limits.context_tokens - budget} tokens; the model's context is {limits.context_tokens}: "
            "shorten the instructions or the message, or lower max_output_tokens",
            param="session.instructions",
            code="context_length_exceeded",
        )
    chars = limits.max_history_chars
    kept = 0
    for msg in reversed(history):
        budget -= estimate_tokens(msg.content)
        chars -= len(msg.content)
        if budget < 0 or chars < 0:
            break
        kept += 1
    return list(history[len(history) - kept :])
