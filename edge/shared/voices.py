"""Which voice names a session may ask for, and the region voice each one is spoken with.

Clients written for OpenAI ask for OpenAI's voices (LiveKit's default is ``marin``); regions speak
Kokoro voices. One table (``VoiceTable``) maps each OpenAI name to a region voice, and lets the
regions' own names through unchanged. A name that is neither is refused where the client sets it
(``session.update``, ``response.create``), with an ``error`` naming the param, so no turn ever
reaches a region with a voice it cannot speak.

The table is configuration: ``EdgeSettings.voices`` (a profile sets its own: ``CPU_VOICES`` for the
``cpu`` profile's Kokoro int8 voices, ``GPU_VOICES`` for the ``gpu`` profile's Kokoro v1.0 English
ones). Sessions keep the name the client asked for and echo it; the mapping happens per turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from edge.shared.errors import VoiceRefused

OPENAI_VOICES = ("alloy", "ash", "ballad", "coral", "echo", "sage", "shimmer", "verse", "marin", "cedar")
"""Every voice the OpenAI Realtime API offers (``openai.types.realtime`` ``AudioOutput.voice``)."""


@dataclass(frozen=True)
class VoiceTable:
    """The voices a session may name: the regions' own, and aliases (OpenAI names) for them.

    ``region_voices`` is what every region of the deployment speaks (its Kokoro voice file); an
    alias must point into it. An empty voice name means the region's default voice."""

    region_voices: frozenset[str]
    aliases: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A table that maps a name to a voice the regions lack would fail every turn: refuse it
        # when the edge starts, not when a user speaks.
        stray = {a: v for a, v in self.aliases.items() if v not in self.region_voices}
        if stray:
            raise ValueError(f"voice aliases point to voices the regions do not speak: {stray}")

    def names(self) -> list[str]:
        """Every name accepted, aliases first (as an error message lists them)."""
        return [*self.aliases, *sorted(self.region_voices - set(self.aliases))]

    def region_voice(self, name: str, *, param: str) -> str:
        """The region voice for ``name`` (``""``: the region's default); ``VoiceRefused`` naming
        ``param`` when no region speaks it."""
        if not name:
            return ""
        if name in self.region_voices:
            return name
        voice = self.aliases.get(name)
        if voice is None:
            accepted = ", ".join(f"'{n}'" for n in self.names())
            raise VoiceRefused(f"Invalid value: '{name}'. Supported values are: {accepted}.", param=param)
        return voice


KOKORO_INT8_VOICES = frozenset({"jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"})
"""The ``cpu`` profile's Kokoro int8 voice file (``voicemesh/models/catalog.py`` ``kokoro-int8``)."""

CPU_VOICES = VoiceTable(
    region_voices=KOKORO_INT8_VOICES,
    # Female OpenAI voices to the four female voices, male ones to the one male voice.
    aliases={
        "alloy": "jf_alpha",
        "ash": "jm_kumo",
        "ballad": "jm_kumo",
        "coral": "jf_gongitsune",
        "echo": "jm_kumo",
        "sage": "jf_nezumi",
        "shimmer": "jf_tebukuro",
        "verse": "jm_kumo",
        "marin": "jf_alpha",
        "cedar": "jm_kumo",
    },
)

KOKORO_V1_ENGLISH_VOICES = frozenset(
    {
        *("af_heart", "af_alloy", "af_aoede", "af_bella", "af_jessica", "af_kore", "af_nicole"),
        *("af_nova", "af_river", "af_sarah", "af_sky"),
        *("am_adam", "am_echo", "am_eric", "am_fenrir", "am_liam", "am_michael", "am_onyx"),
        *("am_puck", "am_santa"),
        *("bf_alice", "bf_emma", "bf_isabella", "bf_lily", "bm_daniel", "bm_fable", "bm_george"),
        "bm_lewis",
    }
)
"""The American (``a*``) and British (``b*``) English voices of Kokoro v1.0 (the ``gpu`` profile)."""

GPU_VOICES = VoiceTable(
    region_voices=KOKORO_V1_ENGLISH_VOICES,
    aliases={
        "alloy": "af_alloy",
        "ash": "am_adam",
        "ballad": "bm_fable",
        "coral": "af_bella",
        "echo": "am_echo",
        "sage": "af_sarah",
        "shimmer": "af_nicole",
        "verse": "am_michael",
        "marin": "af_heart",
        "cedar": "am_onyx",
    },
)
