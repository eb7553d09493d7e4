"""The edge's web pages: the talk page at ``/`` and the operations page at ``/ops``.

Plain ES modules from ``edge/web/``, served as they are: no build step, nothing fetched from outside
at run time. The pages themselves hold no secret. They authenticate with the edge's API key, which
the user types once (or opens ``/#key=KEY``, as ``voicemesh up`` prints) and which stays in the
tab's sessionStorage: the talk page trades it for a short-lived client secret at
``POST /v1/realtime/client_secrets`` and opens the Realtime socket with that secret only; the
operations page sends it as a Bearer token to the edge's authenticated ``GET /status``.
"""

from __future__ import annotations

from pathlib import Path

from litestar import Router, get
from litestar.handlers import HTTPRouteHandler
from litestar.response import File
from litestar.static_files import create_static_files_router

WEB_DIR = Path(__file__).with_name("web")
STATIC_PATH = "/web"


def _page(name: str) -> File:
    # `inline`: the browser renders the page instead of downloading it.
    return File(WEB_DIR / name, filename=name, media_type="text/html", content_disposition_type="inline")


@get("/", include_in_schema=False, sync_to_thread=False)
def talk_page() -> File:
    return _page("index.html")


@get("/ops", include_in_schema=False, sync_to_thread=False)
def ops_page() -> File:
    return _page("ops.html")


def web_route_handlers() -> list[HTTPRouteHandler | Router]:
    """Everything the pages need; add to the edge app's ``route_handlers``."""
    return [talk_page, ops_page, create_static_files_router(path=STATIC_PATH, directories=[WEB_DIR])]
