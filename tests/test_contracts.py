"""The layering contracts `make lint` checks (``[tool.importlinter]`` in pyproject.toml): they hold on
this tree, and each one fails, naming the import, when a module breaks it.

A broken tree is made by copying the packages' sources to a scratch directory and adding one bad
module there; ``lint-imports`` runs on the copy (``PYTHONPATH`` puts it ahead of the editable install).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("wire", "edge", "router", "region", "infra", "voicemesh")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(tree / "pyproject.toml")],
        cwd=tree, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def scratch_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages' Python sources and pyproject.toml, copied once for this module's tests."""
    tree = tmp_path_factory.mktemp("contracts")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            tree / package,
            ignore=shutil.ignore_patterns("__pycache__", "web", "modules", "envs"),
        )
    shutil.copy(ROOT / "pyproject.toml", tree)
    return tree


@pytest.fixture
def tree_with(scratch_tree: Path):  # type: ignore[no-untyped-def]
    """Add modules to the scratch tree for one test; they are removed after it."""
    added: list[Path] = []

    def add(relative: str, source: str) -> Path:
        path = scratch_tree / relative
        path.write_text(source)
        added.append(path)
        return scratch_tree

    yield add
    for path in added:
        path.unlink()


def test_this_tree_keeps_every_contract() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_unchanged_copy_keeps_every_contract(scratch_tree: Path) -> None:
    # The copy is a fair stand-in: what fails below fails because of the added module alone.
    result = _lint(scratch_tree)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_lower_edge_package_importing_a_higher_one_is_refused(tree_with) -> None:  # type: ignore[no-untyped-def]
    tree = tree_with("edge/shared/_breach.py", "from edge.app.services import EdgeServices\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert "The edge's packages, each using only those below it BROKEN" in result.stdout
    assert "edge.shared is not allowed to import edge.app" in result.stdout
    assert "edge.shared._breach -> edge.app.services" in result.stdout


def test_independent_siblings_may_not_import_each_other(tree_with) -> None:  # type: ignore[no-untyped-def]
    tree = tree_with("edge/speech/_breach.py", "import edge.realtime.session\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert "edge.speech is not allowed to import edge.realtime" in result.stdout


def test_the_edge_may_not_reach_into_the_router(tree_with) -> None:  # type: ignore[no-untyped-def]
    tree = tree_with("edge/turns/_breach.py", "from router.core import Router\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert "The edge knows the router by its API and never a region's code BROKEN" in result.stdout
    assert "edge.turns._breach -> router.core" in result.stdout


def test_a_lower_tier_importing_a_higher_one_is_refused(tree_with) -> None:  # type: ignore[no-untyped-def]
    tree = tree_with("wire/_breach.py", "import router.api\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert "Tiers: the tools over the edge and infra" in result.stdout
    assert "wire is not allowed to import router" in result.stdout


def test_an_import_cycle_between_modules_is_refused(tree_with) -> None:  # type: ignore[no-untyped-def]
    tree_with("region/_cycle_a.py", "import region._cycle_b\n")
    tree = tree_with("region/_cycle_b.py", "import region._cycle_a\n")
    result = _lint(tree)
    assert result.returncode == 1
    assert "No import cycle between sibling modules or packages, anywhere BROKEN" in result.stdout
    assert "No cycles are allowed in region" in result.stdout


def test_the_router_contract_names_every_router_module_outside_its_api() -> None:
    """A router module added later is forbidden to the edge unless it is part of the API."""
    api = {"router.api", "router.continuation", "router.metrics"}
    modules = {
        f"router.{p.stem if p.is_file() else p.name}"
        for p in (ROOT / "router").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    forbidden = set(_contracts()["edge-router-api"]["forbidden_modules"])
    assert modules - api == forbidden - {"region"}


def test_every_edge_package_has_a_layer() -> None:
    """``exhaustive`` makes lint-imports refuse an edge package no layer names; this says the same
    of the tree as it is, so the contract's list is the edge's real list."""
    layers = _contracts()["edge-layers"]["layers"]
    named = {name.strip() for layer in layers for name in layer.split("|")}
    packages = {p.name for p in (ROOT / "edge").iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (ROOT / "edge").glob("*.py") if p.stem != "__init__"}
    assert packages | modules == named
