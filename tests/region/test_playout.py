"""``region.playout``: when a caller runs out of audio, and the region's measured synthesis rate."""

from __future__ import annotations

import pytest

from region.playout import Playout, SynthRate


def test_audio_runs_dry_at_the_end_of_what_was_sent_at_playback_pace() -> None:
    p = Playout()
    assert p.start_by(1.0) is None  # no audio yet: the caller waits for a first word, not a next one
    p.sent(2.0, now=10.0)
    p.sent(1.0, now=11.0)  # arrived while the first still played: queued behind it
    assert p.dry_at == 13.0
    p.sent(0.5, now=20.0)  # arrived after a silence: plays from its arrival
    assert p.dry_at == 20.5
    assert p.start_by(1.5) == 19.0


def test_the_rate_is_measured_and_short_clauses_count_their_fixed_cost() -> None:
    rate = SynthRate(prior_s_per_char=0.05)
    assert rate.expected_s("a" * 100) == pytest.approx(5.0)
    rate.update(100, 20.0, now=0.0)  # a loaded region: 0.2 s per character
    assert rate.expected_s("a" * 10) == pytest.approx(2.0)
    assert rate.expected_s("ok") == rate.expected_s("a" * 8)  # at least eight characters' worth
