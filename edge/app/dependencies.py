"""The Litestar dependencies the edge's routes take (``Provide``), by name: each route declares the
narrow part of the edge it uses (``speech_deps``, ``accounting``, ...) as a parameter, and gets
the one this edge's composition root built (``edge/app/services.py``).
"""

from __future__ import annotations

from litestar.di import Provide

from edge.app.services import EdgeServices


def _constant(value: object) -> Provide:
    return Provide(lambda: value, use_cache=True, sync_to_thread=False)


def route_dependencies(services: EdgeServices) -> dict[str, Provide]:
    return {
        "services": _constant(services),  # the edge's own routes (edge/app/asgi.py)
        "speech_deps": _constant(services.speech_deps()),  # edge/speech/*_routes.py, audio_api.py
        "authenticator": _constant(services.auth),  # edge/tenancy/key_routes.py
        "accounting": _constant(services.accounting),  # edge/tenancy/tenant_admin.py
    }


__all__ = ["route_dependencies"]
