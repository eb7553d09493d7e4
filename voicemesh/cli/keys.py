"""``voicemesh keys create|list|rotate|revoke``: stored API keys, through any edge's admin API
(``edge/tenancy/key_routes.py``, ``docs/keys.md``).

The admin key comes from ``--admin-key``, else ``VOICEMESH_ADMIN_KEY``, else the local deployment's
(``voicemesh up`` keeps it in its state directory). A new secret is printed alone on stdout (so
``KEY=$(voicemesh keys create web)`` works); everything else goes to stderr.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

import click
import httpx
from rich.table import Table

from voicemesh import paths
from voicemesh.cli.common import cli, console, fail

DEFAULT_EDGE = "http://127.0.0.1:8080"


def _admin_key(given: str | None) -> str:
    if given:
        return given
    if env := os.environ.get("VOICEMESH_ADMIN_KEY", "").strip():
        return env
    local = paths.state_dir() / "admin-key"  # written by `voicemesh up` (voicemesh/cli/deploy.py)
    if local.is_file():
        return local.read_text().strip()
    fail("no admin key: pass --admin-key, set VOICEMESH_ADMIN_KEY, or run `voicemesh up` (it makes one)")


def _call(ctx: click.Context, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One admin request; a refusal or an unreachable edge ends the command with what to do next."""
    edge, key = ctx.obj["edge"], _admin_key(ctx.obj["admin_key"])
    try:
        res = httpx.request(
            method,
            edge.rstrip("/") + path,
            json=body,
            timeout=10.0,
            headers={"Authorization": f"Bearer {key}"},
        )
    except httpx.ConnectError:
        fail(f"no edge answers at {edge}: start one (`voicemesh up`) or pass --edge URL")
    except httpx.HTTPError as exc:
        fail(f"the edge at {edge} did not answer ({type(exc).__name__}): is it overloaded? try again")
    try:
        data = res.json()
    except ValueError:
        data = None
    if res.is_success:
        return data
    error = data.get("error", {}) if isinstance(data, dict) else {}
    reason = error.get("message") or res.text[:200] or res.reason_phrase
    hint = {
        401: ": the admin key is not valid on this edge",
        403: ": use an admin key (--admin-key or VOICEMESH_ADMIN_KEY), not a caller key",
        404: ": `voicemesh keys list` shows the keys",
        503: ": the edge's Redis is unreachable; retry once it is back",
    }.get(res.status_code, "")
    fail(f"{res.status_code} {reason}{hint}")


def _show(record: dict[str, Any]) -> None:
    limits = ", ".join(
        f"{name}={record[name] if not isinstance(record[name], list) else ','.join(record[name])}"
        for name in ("residency", "max_sessions", "rate_per_s", "burst", "voices", "priority", "on_no_region")
        if record.get(name) is not None
    )
    console.print(f"[bold]{record['id']}[/bold] {record['name']!r}  {limits}")


@cli.group()
@click.option("--edge", default=DEFAULT_EDGE, show_default=True, envvar="VOICEMESH_EDGE_URL",
              help="Any edge of the deployment: keys are shared through its Redis.")  # fmt: skip
@click.option("--admin-key", default=None, help="Default: $VOICEMESH_ADMIN_KEY, else `voicemesh up`'s.")
@click.pass_context
def keys(ctx: click.Context, edge: str, admin_key: str | None) -> None:
    """Stored API keys: each with its residency, limits, voices and priority (docs/keys.md)."""
    ctx.obj = {"edge": edge, "admin_key": admin_key}


def _names(value: str | None) -> list[str] | None:
    return [v for v in value.replace(",", " ").split() if v] if value else None


@keys.command("create")
@click.argument("name")
@click.option("--residency", default=None, help="Region residency tags, e.g. eu,de (default: anywhere).")
@click.option("--max-sessions", type=int, default=None, help="Open sessions across all edges.")
@click.option("--rate", "rate_per_s", type=float, default=None, help="New sessions per second (refill).")
@click.option("--burst", type=int, default=None, help="New sessions at once.")
@click.option("--voices", default=None, help="The only voices allowed, e.g. marin,jf_alpha (default: all).")
@click.option("--priority", type=click.Choice(["high", "normal", "low"]), default=None)
@click.option("--on-no-region", type=click.Choice(["edge_voice", "error"]), default=None,
              help="No region of the residency can answer: the edge's own voice, or an error.")  # fmt: skip
@click.pass_context
def create(
    ctx: click.Context, name: str, residency: str | None, max_sessions: int | None, rate_per_s: float | None,
    burst: int | None, voices: str | None, priority: str | None, on_no_region: str | None,
) -> None:  # fmt: skip
    """Make a key; its secret is printed once (stdout) and never shown again."""
    body = {
        "name": name, "residency": _names(residency), "max_sessions": max_sessions, "rate_per_s": rate_per_s,
        "burst": burst, "voices": _names(voices), "priority": priority, "on_no_region": on_no_region,
    }  # fmt: skip
    record = _call(ctx, "POST", "/v1/keys", {k: v for k, v in body.items() if v is not None})
    _show(record)
    console.print("secret (shown once, store it now):")
    click.echo(record["secret"])


@keys.command("list")
@click.option("--json", "as_json", is_flag=True, help="The keys as JSON (stdout).")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """Every key, revoked ones too (never a secret)."""
    data = _call(ctx, "GET", "/v1/keys")["data"]
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    table = Table("id", "name", "residency", "sessions", "rate/burst", "voices", "priority", "state")
    for r in data:
        state = "revoked" if r["revoked_at"] else ("rotated" if r["rotated_at"] else "active")
        table.add_row(
            r["id"], r["name"], ",".join(r["residency"] or ["any"]), str(r["max_sessions"] or "default"),
            f"{r['rate_per_s'] or 'default'}/{r['burst'] or 'default'}", ",".join(r["voices"] or ["all"]),
            r["priority"], state,
        )  # fmt: skip
    console.print(table)


@keys.command("rotate")
@click.argument("key_id")
@click.option("--grace", "grace_s", type=click.FloatRange(0), default=0.0, show_default=True,
              help="Seconds the old secret keeps working.")  # fmt: skip
@click.pass_context
def rotate(ctx: click.Context, key_id: str, grace_s: float) -> None:
    """A new secret for the key (printed once, stdout); the old one stops working after --grace."""
    record = _call(ctx, "POST", f"/v1/keys/{quote(key_id, safe='')}/rotate", {"grace_s": grace_s})
    _show(record)
    console.print("new secret (shown once, store it now):")
    click.echo(record["secret"])


@keys.command("revoke")
@click.argument("key_id")
@click.pass_context
def revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke the key: every edge refuses it within a second, and its open sessions end."""
    record = _call(ctx, "DELETE", f"/v1/keys/{quote(key_id, safe='')}")
    console.print(f"[bold]{record['id']}[/bold] {record['name']!r} revoked")


__all__ = ["keys"]
