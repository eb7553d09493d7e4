"""The edge's web pages: the talk page at ``/`` and the operations page at ``/ops``.

Plain ES modules from ``edge/web/``, served as they are: no build step, nothing fetched from outside
at run time. The pages themselves hold no secret. They authenticate with the edge's API key, which
the user types once (or opens ``/#key=KEY``, as ``voicemesh up`` prints) and which stays in the
tab's sessionStorage: the talk page trades it for a short-lived client secret at
``POST /v1/realtime/client_secrets`` and connects with that secret only (a WebRTC call at
``POST /v1/realtime/calls`` by default, or the Realtime WebSocket); the operations page sends it as
a Bearer token to the edge's authenticated ``GET /status``.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Router, get
from litestar.exceptions import NotFoundException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath
from litestar.response import File

WEB_DIR = Path(__file__).parent.parent / "web"
STATIC_PATH = "/web"
WEB_FILES = frozenset(p.name for p in WEB_DIR.iterdir() if p.is_file())
"""The files ``/web/<name>`` serves: looked up by name in this set, never by joining a client's
path onto a directory, so no path (``%00``, ``..``, 5,000 characters) reaches the file system."""


def _page(name: str) -> File:
    # `inline`: the browser renders the page instead of downloading it.
    return File(WEB_DIR / name, filename=name, media_type="text/html", content_disposition_type="inline")


@get("/", include_in_schema=False, sync_to_thread=False)
def talk_page() -> File:
    return _page("index.html")


@get("/ops", include_in_schema=False, sync_to_thread=False)
def ops_page() -> File:
    return _page("ops.html")


@get(STATIC_PATH + "/{name:str}", include_in_schema=False, sync_to_thread=False)
def web_file(name: FromPath[str]) -> File:
    """The pages' scripts and style sheet; anything else is a 404."""
    if name not in WEB_FILES:
        raise NotFoundException(f"no file {name[:64]!r} here")
    return File(WEB_DIR / name, filename=name, content_disposition_type="inline")


def web_route_handlers() -> list[HTTPRouteHandler | Router]:
    """Everything the pages need; add to the edge app's ``route_handlers``."""
    return [talk_page, ops_page, web_file]
