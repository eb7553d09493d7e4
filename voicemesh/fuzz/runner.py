"""Run one fuzzer (a strategy and a case runner) against a live target with Hypothesis, bounded by
cases and seconds, seeded; failures come back shrunk to a minimal case.

Hypothesis runs in chunks of ``CHUNK`` cases, each seeded from ``seed``: the budget is checked
between cases (a case is bounded by its own timeout), and a chunk that found a failure shrinks it
before the next begins. Each ``OracleFailure`` class is shrunk and reported on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from websockets.exceptions import WebSocketException

from voicemesh.fuzz.oracle import OracleFailure, ServerFault, Unclear

Case = TypeVar("Case")
CHUNK = 25


@dataclass(frozen=True)
class Failure:
    fuzzer: str
    kind: str
    detail: str
    reproducer: str
    """The minimal case Hypothesis shrank it to, as something to send again."""


@dataclass
class Outcome:
    fuzzer: str
    cases: int = 0
    """Inputs sent, shrinking's replays included."""
    failures: list[Failure] = field(default_factory=list)


def show(case: Any) -> str:
    """A case as text to resend: JSON where it is JSON, ``repr`` otherwise; long values cut."""
    text = repr(case)
    return text if len(text) <= 2_000 else text[:2_000] + f"... ({len(text)} chars in all)"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


def run_fuzzer(
    fuzzer: str,
    strategy: st.SearchStrategy[Case],
    run_case: Callable[[Case], None],
    *,
    cases: int,
    deadline: float,
    seed: int,
    describe: Callable[[Any], str] = show,
) -> Outcome:
    """Up to ``cases`` generated cases, until ``deadline`` (``time.monotonic()``)."""
    outcome = Outcome(fuzzer)
    chunk = 0
    while outcome.cases < cases and time.monotonic() < deadline:
        sent = _Chunk(outcome, run_case, min(CHUNK, cases - outcome.cases), deadline, describe).run(
            strategy, seed * 1_000 + chunk
        )
        chunk += 1
        if sent == 0:
            break
    return outcome


class _Chunk:
    """Up to ``budget`` cases in one Hypothesis run; their failures, shrunk, added to ``outcome``."""

    def __init__(
        self, outcome: Outcome, run_case: Callable[[Any], None], budget: int, deadline: float,
        describe: Callable[[Any], str],
    ) -> None:  # fmt: skip
        self.outcome, self.run_case, self.budget, self.deadline = outcome, run_case, budget, deadline
        self.describe = describe
        self.sent = 0
        self.failing = False

    def check(self, case: Any) -> None:
        if not self.failing and (self.sent >= self.budget or time.monotonic() >= self.deadline):
            return  # out of budget: the rest of the chunk is skipped (never while shrinking)
        self.sent += 1
        self.outcome.cases += 1
        try:
            self.run_case(case)
        except OracleFailure as exc:
            self.failing, exc.case = True, case
            raise
        except (OSError, WebSocketException) as exc:
            self.failing = True
            raise ServerFault(f"the connection failed: {exc!r}", case) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self.failing = True
            raise Unclear(f"an answer that is not JSON: {exc}", case) from None

    def run(self, strategy: st.SearchStrategy[Any], seed: int) -> int:
        """Cases sent (shrinking's replays included)."""
        test = settings(
            max_examples=self.budget, deadline=None, database=None, derandomize=False,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=True,
            phases=[Phase.generate, Phase.shrink], verbosity=Verbosity.quiet, print_blob=False,
        )(hypothesis_seed(seed)(given(strategy)(self.check)))  # fmt: skip
        try:
            test()
        except (OracleFailure, BaseExceptionGroup, Flaky) as raised:
            flaky = " (did not fail again on replay)" if isinstance(raised, Flaky) else ""
            for exc in _leaves(raised):
                if isinstance(exc, OracleFailure):
                    detail, reproducer = exc.detail + flaky, self.describe(exc.case)
                    self.outcome.failures.append(Failure(self.outcome.fuzzer, exc.kind, detail, reproducer))
                else:
                    # Not the oracle's: the fuzzer itself failed (Hypothesis notes the case it had).
                    notes = " ".join(getattr(exc, "__notes__", []))
                    self.outcome.failures.append(
                        Failure(self.outcome.fuzzer, "fuzzer error", repr(exc), notes)
                    )
        return self.sent
