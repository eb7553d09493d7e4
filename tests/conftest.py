"""Test-suite wiring: heavy things (models, vLLM, regions) start once per run and are shared.

Two tiers: ``make test-fast`` runs what needs no model, no vLLM and no system service (under a
minute, right after ``pip install``); ``make test`` runs everything.

One rule puts a test in the slow tier: it uses (directly or through other fixtures) one of
``HEAVY_FIXTURES``. A test is slow because of what it uses, so a new test that asks for a region is
classified without anyone remembering to mark it. Nothing else decides the tier: a hand-written
``pytest.mark.slow`` on a test no heavy fixture reaches stops the run (ask for the fixture, or add
yours to ``HEAVY_FIXTURES``), and a ``_live`` in a file name only says the file runs against real
regions. ``pytest -m slow --collect-only -q`` lists the slow tier.
"""

import pytest

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.otlp",
    "tests.fixtures.llm",
    "tests.fixtures.region",
    "tests.fixtures.edge",
    "tests.fixtures.router",
    "tests.fixtures.infra",
    "tests.fixtures.drills",
    "tests.fixtures.webhooks",
    "tests.fixtures.image",
    "pytester",  # tests/test_tiers.py runs pytest on a scratch suite
]

HEAVY_FIXTURES = frozenset(
    {
        "models",  # every model of the cpu profile (every region, edge and LLM fixture depends on it)
        "speech",  # espeak-ng, a system package
        "redis_url",  # a real redis-server
        "terraform",  # the Terraform toolchain from PyPI
        "voicemesh_image",  # the container image: podman, buildah, mmdebstrap, umoci (minutes to build)
        "fuzzed_edge",  # an edge fuzzed with hundreds of generated requests (tests/edge/test_fuzz_http.py)
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    by_hand = []
    for item in items:
        if HEAVY_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
        elif item.get_closest_marker("slow") is not None:
            by_hand.append(item.nodeid)
    # A test that takes the shared local deployment down runs last, whatever the files' order (the
    # drills and the dashboard test use the same deployment).
    items.sort(key=lambda item: item.get_closest_marker("ends_local_deployment") is not None)
    if by_hand:
        raise pytest.UsageError(
            f"{len(by_hand)} test(s) marked slow by hand, which no heavy fixture reaches (first: "
            f"{by_hand[0]}): ask for the heavy fixture the test needs, or add it to HEAVY_FIXTURES "
            "in tests/conftest.py; the tier comes from fixtures only"
        )
