"""Where the observability files are: the Prometheus rules (``modules/prometheus-rules``, which both
the local Prometheus and the cloud's PrometheusRule read) and the Grafana dashboard, and the
queries of that dashboard (what tests/infra/test_dashboard.py runs against a live Prometheus)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from infra.environment import INFRA_ROOT

RULES_MODULE = INFRA_ROOT / "modules" / "prometheus-rules"
RULES_DIR = RULES_MODULE / "rules"
RULES_TEST = RULES_MODULE / "tests" / "rules_test.yml"
DASHBOARD = INFRA_ROOT / "dashboards" / "voicemesh.json"

_VARIABLES = {"$__rate_interval": "1m", "$__interval": "15s", "$__range": "5m"}


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside rows included."""
    out: list[dict[str, Any]] = []
    for panel in dashboard.get("panels", []):
        out.append(panel)
        out += panels(panel)
    return out


def dashboard_queries(path: Path = DASHBOARD, rate_interval: str = "1m") -> dict[str, list[str]]:
    """Panel title -> its PromQL expressions, Grafana's variables substituted (``$__rate_interval``
    by ``rate_interval``: at least four scrape intervals)."""
    values = {**_VARIABLES, "$__rate_interval": rate_interval}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(values, key=len, reverse=True)))
    found: dict[str, list[str]] = {}
    for panel in panels(json.loads(path.read_text())):
        exprs = [t["expr"] for t in panel.get("targets", []) if t.get("expr")]
        if exprs:
            found[panel["title"]] = [pattern.sub(lambda m: values[m.group(0)], e) for e in exprs]
    return found
