"""Drive a real ``RealtimeSession`` with real client event JSON and no socket (in the spirit of
pipecat's ``run_test`` and ``region/testing/``): send what a client sends, get back every server
event the session sent, decoded.

    services = memory_services(ScriptedRouter(spoken_reply("Hi there.")))
    async with SessionHarness(services) as edge:
        await edge.send({"type": "conversation.item.create", "item": {...}})
        await edge.send({"type": "response.create"})
        events = await edge.wait_for("response.done")

The stand-ins (``scripted_router``, ``models``) replace models where a model is not what is under
test; everything between them (session, conversation, VAD turn logic, response relay, pacing,
framing) is the real code. One module per job: ``audio`` (tone, silence), ``scripted_router``,
``models`` (VAD, fallback voice), ``services`` (``memory_services``), ``harness`` (the session).
"""

from edge.testing.audio import rms, silence, tone
from edge.testing.harness import SessionHarness, run_events
from edge.testing.models import EnergyStream, EnergyVad, ToneVoice
from edge.testing.scripted_router import (
    Hold,
    Raise,
    ScriptedRouter,
    ScriptedTurn,
    ScriptStep,
    called,
    clause,
    heard,
    spoken_reply,
    text_reply,
)
from edge.testing.services import memory_services, served

__all__ = [
    "EnergyStream",
    "EnergyVad",
    "Hold",
    "Raise",
    "ScriptStep",
    "ScriptedRouter",
    "ScriptedTurn",
    "SessionHarness",
    "ToneVoice",
    "called",
    "clause",
    "heard",
    "memory_services",
    "rms",
    "run_events",
    "served",
    "silence",
    "spoken_reply",
    "text_reply",
    "tone",
]
