"""Voices: every OpenAI voice name maps to a region voice through the one table (``edge/shared/voices.py``),
region voice names pass through, and a voice no region speaks is refused where the client names it,
with an ``error`` naming the param and nothing changed, never at a turn.

Fast tier: ``edge.testing`` stand-ins. The scripted router records the ``TurnStart`` the edge sent,
which is what is under test: the region voice a turn asks for.
"""

from __future__ import annotations

from typing import Any

import pytest

from edge.shared.settings import EdgeSettings
from edge.shared.voices import (
    CPU_VOICES,
    GPU_VOICES,
    KOKORO_INT8_VOICES,
    KOKORO_V1_ENGLISH_VOICES,
    OPENAI_VOICES,
    VoiceTable,
)
from edge.testing import ScriptedRouter, SessionHarness, memory_services, spoken_reply
from voicemesh.profiles import cpu_profile, gpu_profile


def _update(**session: Any) -> dict[str, Any]:
    return {"type": "session.update", "session": {"type": "realtime", **session}}


def _voice(name: str) -> dict[str, Any]:
    return {"output": {"voice": name}}


async def _turn(edge: SessionHarness, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """One typed turn; the ``response.done`` it ends with."""
    count = len(edge.of_type("response.done")) + 1
    await edge.say("Hello?")
    await edge.send({"type": "response.create", **({"response": response} if response else {})})
    await edge.wait_for("response.done", count)
    return edge.of_type("response.done")[-1]["response"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", OPENAI_VOICES)
async def test_each_openai_voice_is_spoken_by_its_region_voice_and_echoed(name: str) -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(audio=_voice(name)))
        assert edge.sent[-1]["type"] == "session.updated"
        assert edge.sent[-1]["session"]["audio"]["output"]["voice"] == name
        done = await _turn(edge)
    assert router.turns[0].start.voice == CPU_VOICES.aliases[name]
    assert router.turns[0].start.voice in KOKORO_INT8_VOICES
    assert done["status"] == "completed" and done["audio"]["output"]["voice"] == name
    assert edge.of_type("response.created")[0]["response"]["audio"]["output"]["voice"] == name
    assert edge.of_type("error") == []


async def test_region_voice_names_pass_through() -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(audio=_voice("jm_kumo")))
        await _turn(edge)
    assert router.turns[0].start.voice == "jm_kumo"


async def test_no_voice_set_leaves_the_choice_to_the_region() -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        await _turn(edge)
    assert router.turns[0].start.voice == ""


async def test_a_voice_no_region_speaks_is_refused_at_session_update_and_nothing_changes() -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        await edge.send(_update(audio=_voice("cedar")))
        before = len(edge.sent)
        # An unknown voice beside a valid change: the whole update is refused (all or nothing).
        await edge.send({**_update(instructions="Be terse.", audio=_voice("af_heart")), "event_id": "e1"})
        (error,) = edge.sent[before:]
        assert error["type"] == "error"
        assert error["error"]["param"] == "session.audio.output.voice"
        assert error["error"]["code"] == "invalid_value" and error["error"]["event_id"] == "e1"
        assert "'af_heart'" in error["error"]["message"] and "'marin'" in error["error"]["message"]
        assert (edge.state.voice, edge.state.instructions) == (
            "cedar",
            edge.services.settings.default_instructions,
        )
        # The session goes on, with the voice it had.
        done = await _turn(edge)
    assert done["status"] == "completed"
    assert router.turns[0].start.voice == CPU_VOICES.aliases["cedar"]


async def test_a_response_may_name_its_own_voice_and_an_unknown_one_is_refused_before_it_starts() -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    async with SessionHarness(memory_services(router)) as edge:
        done = await _turn(edge, {"audio": {"output": {"voice": "shimmer"}}})
        assert done["audio"]["output"]["voice"] == "shimmer"
        assert router.turns[0].start.voice == CPU_VOICES.aliases["shimmer"]
        before = len(edge.sent)
        await edge.send({"type": "response.create", "response": {"audio": {"output": {"voice": "nobody"}}}})
        (error,) = edge.sent[before:]
        assert error["type"] == "error" and error["error"]["param"] == "response.audio.output.voice"
    assert len(router.turns) == 1, "a refused voice reached the router"
    assert edge.state.voice == "", "a response's voice changed the session's"


async def test_an_edge_configured_with_the_gpu_table_speaks_its_voices() -> None:
    router = ScriptedRouter(spoken_reply("Hi."))
    services = memory_services(router, settings=EdgeSettings(voices=GPU_VOICES))
    async with SessionHarness(services) as edge:
        await edge.send(_update(audio=_voice("marin")))
        await _turn(edge)
        await edge.send(_update(audio=_voice("jf_alpha")))  # a cpu voice: not on these regions
        assert edge.sent[-1]["type"] == "error"
    assert router.turns[0].start.voice == "af_heart"


@pytest.mark.parametrize("table", [CPU_VOICES, GPU_VOICES], ids=["cpu", "gpu"])
def test_each_table_maps_every_openai_voice_into_its_regions_voices(table: VoiceTable) -> None:
    assert set(table.aliases) == set(OPENAI_VOICES)
    assert set(table.aliases.values()) <= table.region_voices
    assert GPU_VOICES.region_voices == KOKORO_V1_ENGLISH_VOICES


def test_each_profile_carries_the_table_of_its_voices() -> None:
    for profile, table in ((cpu_profile(), CPU_VOICES), (gpu_profile(), GPU_VOICES)):
        assert profile.voices is table
        assert profile.tts.default_voice in table.region_voices


def test_a_table_aliasing_a_voice_the_regions_lack_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="af_nobody"):
        VoiceTable(region_voices=frozenset({"jf_alpha"}), aliases={"marin": "af_nobody"})


def test_a_table_resolves_an_alias_and_a_region_voice() -> None:
    table = VoiceTable(region_voices=frozenset({"jf_alpha", "jm_kumo"}),
                       aliases={"marin": "jf_alpha", "cedar": "jm_kumo"})  # fmt: skip
    assert table.region_voice("cedar", param="p") == "jm_kumo"
    assert table.region_voice("jf_alpha", param="p") == "jf_alpha"
