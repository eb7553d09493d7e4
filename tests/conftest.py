"""Test-suite wiring: heavy things (models, vLLM, regions) start once per run and are shared."""

pytest_plugins = [
    "tests.fixtures.common",
    "tests.fixtures.llm",
    "tests.fixtures.region",
    "tests.fixtures.edge",
    "tests.fixtures.router",
    "tests.fixtures.infra",
    "tests.fixtures.drills",
]
