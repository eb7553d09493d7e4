"""The edge's own limits as units: admission per key and per edge, the token estimate and the
history fit (``edge/shared/limits.py``). The session-level behaviour is in ``test_session_update.py``,
``test_conversation.py`` and the fuzz suite.

Fast tier: no model, no socket.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from edge.shared.errors import InvalidParam, TooManySessions
from edge.shared.limits import KeyLimits, estimate_tokens, fit_history
from edge.shared.settings import ContentLimits, LimitSettings
from wire.turn import Message


def test_the_edge_wide_cap_counts_every_key_and_frees_on_release() -> None:
    limits = KeyLimits(LimitSettings(max_sessions=3, max_sessions_per_key=2))
    limits.acquire("a")
    limits.acquire("a")
    with pytest.raises(TooManySessions) as per_key:
        limits.acquire("a")
    assert per_key.value.code == "session_limit_exceeded"
    limits.acquire("b")
    with pytest.raises(TooManySessions) as per_edge:
        limits.acquire("c")  # a fresh key, but the edge is full
    assert per_edge.value.code == "edge_session_limit_exceeded"
    assert limits.total == 3
    limits.release("a")
    limits.acquire("c")
    assert (limits.total, limits.active("a"), limits.active("c")) == (3, 1, 1)


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog. " * 20,
        "東京は日本の首都です。" * 20,
        "😀" * 50,
        "",
    ],
)
def test_the_token_estimate_counts_at_least_one_token_per_three_bytes(text: str) -> None:
    # Byte-level BPE merges bytes: ~4 bytes a token in English, ~3 in CJK; 3 stays on the safe side.
    assert estimate_tokens(text) >= len(text.encode()) / 3 + 4


def test_fit_history_drops_the_oldest_first_and_refuses_what_cannot_fit() -> None:
    limits = replace(ContentLimits(), context_tokens=400, reserved_tokens=0)
    history = [Message("user", str(i) * 150) for i in range(5)]  # 54 tokens each
    kept = fit_history(history, fixed=("be brief",), max_output_tokens=200, limits=limits)
    assert kept == history[-3:]  # 400 - 200 - 7 leaves room for three
    assert fit_history(history, fixed=(), max_output_tokens=400, limits=limits) == []
    with pytest.raises(InvalidParam) as refused:
        fit_history(history, fixed=("x" * 600,), max_output_tokens=200, limits=limits)
    assert refused.value.code == "context_length_exceeded"
    by_chars = replace(limits, context_tokens=10_000, max_history_chars=320)
    assert fit_history(history, fixed=(), max_output_tokens=1, limits=by_chars) == history[-2:]
