"""The custom voices API, on every edge (``docs/speech.md``, "Custom voices"):

* ``POST /v1/voices``  make a voice: ``{"name", "blend": {voice: weight}}`` or ``{"name", "style":
  base64}``; ``"shared": true`` (admin keys only) makes it usable by every key
* ``GET /v1/voices``  the voices this key may use (its own and the shared ones; an admin sees all)
* ``GET /v1/voices/{id}``  one of them
* ``DELETE /v1/voices/{id}``  its owner, or an admin

A bad body is a 400 naming the field (OpenAI's error JSON); a voice the key cannot see is a 404;
an unreachable voice store a 503. Who may see and use which voice: ``edge/speech/custom_voices.py``.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, delete, get, post
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, SkipValidation

from edge.speech.audio_api import Authenticate
from edge.speech.custom_voices import VoiceLibrary
from edge.speech.speech_deps import SpeechDeps
from edge.tenancy.auth import Principal


def voice_route_handlers(authenticate: Authenticate) -> list[HTTPRouteHandler]:
    async def caller(request: Request[Any, Any, Any], deps: SpeechDeps) -> tuple[VoiceLibrary, Principal]:
        return deps.voices, await authenticate(request, [])

    @post("/v1/voices", status_code=201)
    async def create_voice(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> dict[str, Any]:
        library, principal = await caller(request, speech_deps)
        await speech_deps.limits.check_rate(principal.key_id, principal.policy)  # a write: the key's bucket
        return (await library.create(await request.body(), principal)).public()

    @get("/v1/voices")
    async def list_voices(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps]
    ) -> dict[str, Any]:
        library, principal = await caller(request, speech_deps)
        return {"object": "list", "data": [r.public() for r in await library.visible(principal)]}

    @get("/v1/voices/{voice_id:str}")
    async def get_voice(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps], voice_id: FromPath[str]
    ) -> dict[str, Any]:
        library, principal = await caller(request, speech_deps)
        return (await library.get(voice_id, principal)).public()

    @delete("/v1/voices/{voice_id:str}", status_code=200)
    async def delete_voice(
        request: Request[Any, Any, Any], speech_deps: SkipValidation[SpeechDeps], voice_id: FromPath[str]
    ) -> dict[str, Any]:
        library, principal = await caller(request, speech_deps)
        record = await library.delete(voice_id, principal)
        return {"id": record.id, "object": "voice.deleted", "deleted": True}

    return [create_voice, list_voices, get_voice, delete_voice]


__all__ = ["voice_route_handlers"]
