"""Test-suite wiring: heavy things (models, vLLM, regions) start once per run and are shared.

Two tiers: ``make test-fast`` runs what needs no model, no vLLM and no system service (under a
minute, right after ``pip install``); ``make test`` runs everything. A test is in the slow tier when
it carries ``pytest.mark.slow`` or when any fixture it uses (directly or through other fixtures)
is one of ``HEAVY_FIXTURES``, so a new test that asks for a region is classified without anyone
remembering to mark it.
"""

import pytest

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.llm",
    "tests.fixtures.region",
    "tests.fixtures.edge",
    "tests.fixtures.router",
    "tests.fixtures.infra",
    "tests.fixtures.drills",
    "tests.fixtures.webhooks",
    "tests.fixtures.image",
]

HEAVY_FIXTURES = frozenset(
    {
        "models",  # every model of the cpu profile (every region, edge and LLM fixture depends on it)
        "speech",  # espeak-ng, a system package
        "redis_url",  # a real redis-server
        "terraform",  # the Terraform toolchain from PyPI
        "voicemesh_image",  # the container image: podman, buildah, mmdebstrap, umoci (minutes to build)
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HEAVY_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
