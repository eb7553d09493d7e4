"""The one rule for the slow tier (tests/conftest.py): a heavy fixture puts a test there, and a
``pytest.mark.slow`` written by hand on a test no heavy fixture reaches stops the run.

Each case runs pytest for real (``pytester``) on a scratch suite whose conftest is the suite's own
hook; ``models`` there is a stand-in of the same name, since what is under test is the
classification, not the models.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from tests.conftest import pytest_collection_modifyitems  # the hook under test

@pytest.fixture
def models():
    return {}

@pytest.fixture
def region(models):
    return "region"
"""


def _collect(pytester: pytest.Pytester, tests: str, *args: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = session\n")
    pytester.makepyfile(test_scratch=tests)
    return pytester.runpytest("--collect-only", "-q", *args)


def test_a_heavy_fixture_directly_or_through_another_makes_a_test_slow(pytester: pytest.Pytester) -> None:
    tests = "def test_light(): pass\ndef test_models(models): pass\ndef test_region(region): pass\n"
    fast = _collect(pytester, tests, "-m", "not slow")
    assert [line for line in fast.outlines if "::" in line] == ["test_scratch.py::test_light"]
    slow = _collect(pytester, tests, "-m", "slow")
    assert [line for line in slow.outlines if "::" in line] == [
        "test_scratch.py::test_models",
        "test_scratch.py::test_region",
    ]


def test_a_hand_mark_no_heavy_fixture_backs_stops_the_run(pytester: pytest.Pytester) -> None:
    tests = "import pytest\n\n@pytest.mark.slow\ndef test_marked(): pass\n"
    result = _collect(pytester, tests)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*marked slow by hand*test_scratch.py::test_marked*HEAVY_FIXTURES*"])
