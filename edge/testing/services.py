"""``memory_services``: the edge's services on the stand-ins and in-memory stores; ``served``: the
edge's real server (uvicorn on loopback) on them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from edge.app.server import EdgeTask
from edge.app.services import EdgeServices
from edge.shared.protocols import FallbackSpeaker, TurnModel, Vad
from edge.shared.settings import EdgeSettings
from edge.testing.models import EnergyVad, ToneVoice
from edge.testing.scripted_router import ScriptedRouter, spoken_reply
from router.api import TurnRouter


def memory_services(
    router: TurnRouter | None = None,
    *,
    vad: Vad | None = None,
    fallback: FallbackSpeaker | None = None,
    settings: EdgeSettings | None = None,
    turn_model: TurnModel | None = None,
) -> EdgeServices:
    """``EdgeServices`` on stand-ins (a router with one empty reply, ``EnergyVad``, ``ToneVoice``) and
    in-memory stores; pass real ones for whatever is under test."""
    settings = settings or EdgeSettings(api_keys=("test-key",))
    return EdgeServices.with_models(
        settings,
        router if router is not None else ScriptedRouter(spoken_reply("Hello.")),
        vad=vad if vad is not None else EnergyVad(),
        fallback=fallback if fallback is not None else ToneVoice(),
        turn_model=turn_model,
    )


@asynccontextmanager
async def served(settings: EdgeSettings, router: TurnRouter) -> AsyncIterator[EdgeServices]:
    """The edge serving on ``settings.port`` (loopback) with ``memory_services``, stopped on exit."""
    services = memory_services(router, settings=settings)
    edge = await EdgeTask.start(settings, router, services=services)
    try:
        yield services
    finally:
        await edge.aclose()
