"""The Prometheus rules (infra/modules/prometheus-rules/rules) are valid and do what they say:
``promtool check rules`` on every file, and ``promtool test rules`` on input series with the alerts
they must and must not raise (infra/modules/prometheus-rules/tests/rules_test.yml). The cloud's
PrometheusRule carries the same groups (tests/infra/test_k8s_manifests.py). Needs Debian's
``prometheus`` package (``make setup``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from infra.observability import RULES_DIR, RULES_TEST, dashboard_queries


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is missing: `make setup` installs it (Debian's prometheus package)")
    return found


def run(promtool: str, *args: str, cwd: Path) -> str:
    done = subprocess.run([promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_every_rule_file_passes_promtool_check(promtool: str) -> None:
    files = sorted(RULES_DIR.glob("*.yml"))
    assert {f.name for f in files} == {"recording.yml", "alerts.yml"}
    out = run(promtool, "check", "rules", *map(str, files), cwd=RULES_DIR)
    assert out.count("SUCCESS") == len(files), out


def test_the_alerts_fire_on_their_faults_and_stay_quiet_otherwise(promtool: str) -> None:
    out = run(promtool, "test", "rules", RULES_TEST.name, cwd=RULES_TEST.parent)
    assert "SUCCESS" in out, out
    tested = yaml.safe_load(RULES_TEST.read_text())
    fired = {a["alertname"] for t in tested["tests"] for a in t["alert_rule_test"] if a["exp_alerts"]}
    groups = [g for f in RULES_DIR.glob("*.yml") for g in yaml.safe_load(f.read_text())["groups"]]
    defined = {r["alert"] for g in groups for r in g["rules"] if "alert" in r}
    assert fired == defined, f"alerts no test makes fire: {sorted(defined - fired)}"


def test_a_broken_rule_is_refused(promtool: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("groups:\n  - name: x\n    rules:\n      - alert: X\n        expr: rate(voicemesh_x[5m]\n")
    done = subprocess.run([promtool, "check", "rules", str(bad)], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "parse error" in done.stdout + done.stderr


def test_every_dashboard_query_is_valid_promql(promtool: str, tmp_path: Path) -> None:
    """Offline: each panel's expression, Grafana's variables substituted, as a recording rule that
    promtool parses (the live test, tests/infra/test_dashboard.py, runs them on real data)."""
    queries = [e for exprs in dashboard_queries().values() for e in exprs]
    assert len(queries) >= 14 and not [q for q in queries if "$" in q]
    rules = [{"record": f"dashboard:query_{i}", "expr": q} for i, q in enumerate(queries)]
    (tmp_path / "dashboard.yml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    run(promtool, "check", "rules", "dashboard.yml", cwd=tmp_path)
