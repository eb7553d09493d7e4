"""A Realtime session's settings and conversation, as the edge keeps them (regions are stateless).

It is saved whole in the session's snapshot (``edge/realtime/session_snapshot.py``) after each
settings change and each turn, in the edge store (``edge/stores/``: memory for one process, or
Redis shared by several edges, with this edge's memory standing in while Redis fails).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from wire.turn import Message, Priority, Tool, ToolChoice
from wire.voices import CustomVoice


class TurnDetection(msgspec.Struct, kw_only=True):
    threshold: float
    prefix_padding_ms: int
    silence_duration_ms: int
    create_response: bool = True
    interrupt_response: bool = True
    voicemesh_backchannel: bool = True
    """Speech over an answer pauses it and, if only a backchannel ("mm-hm"), resumes it
    (``edge/realtime/backchannel.py``); off: a barge-in at once. The edge's default is
    ``BackchannelSettings.enabled``."""
    eagerness: str | None = None
    """``semantic_vad`` (``low``, ``medium``, ``high``, ``auto``): a pause ends the turn when the turn
    model calls it complete, else after ``EAGERNESS_MS`` of silence (``edge/realtime/semantic_turns.py``).
    ``None``: ``server_vad``, ``silence_duration_ms`` of silence ends it."""


EAGERNESS_MS = {"low": 8000, "medium": 4000, "high": 2000, "auto": 4000}
"""How long ``semantic_vad`` waits in silence when the turn model says "not complete" (OpenAI's)."""


def heard_as(td: TurnDetection) -> TurnDetection:
    """What the edge's VAD listens with: ``semantic_vad``'s silence window is its eagerness timeout."""
    if td.eagerness is None:
        return td
    return msgspec.structs.replace(td, silence_duration_ms=EAGERNESS_MS[td.eagerness])


class InputTranscription(msgspec.Struct, kw_only=True):
    """``session.audio.input.transcription``: every committed user audio turn gets its transcript.
    The model name is the client's (echoed); the region's own STT does the work."""

    model: str | None = None
    language: str | None = None
    prompt: str | None = None


class SessionState(msgspec.Struct, kw_only=True):
    id: str
    key_id: str
    model: str = ""
    voice: str = ""
    instructions: str = ""
    turn_detection: TurnDetection | None = None
    output_modalities: list[str] = msgspec.field(default_factory=lambda: ["audio"])
    max_output_tokens: int = 200
    input_audio_format: str = "audio/pcm"
    """``session.audio.input.format.type`` (``edge/audio/audio_formats.py``); likewise for output."""
    output_audio_format: str = "audio/pcm"
    transcription: InputTranscription | None = None
    temperature: float = 0.7
    tools: list[Tool] = msgspec.field(default_factory=list)
    """``session.tools`` (function tools; ``edge/responses/response_tools.py``)."""
    tool_choice: ToolChoice = "auto"
    history: list[Message] = msgspec.field(default_factory=list)
    created_at: float = 0.0
    residency: list[str] | None = None
    """Region residency tags that may serve this session's turns (its key's, narrowed by the session:
    ``edge/tenancy/session_tenancy.py``); ``None``: anywhere. Kept in the snapshot, so a resume keeps it."""
    priority: Priority = "normal"
    """The key's class in a region's queue (``TurnStart.priority``)."""
    on_no_region: Literal["edge_voice", "error"] = "edge_voice"
    """What a turn gets when no region of the residency can serve it (``edge/shared/key_policy.py``)."""
    custom_voice: CustomVoice | None = None
    """``voice`` names a custom voice: its definition, as it was when the session chose it (each
    turn carries it to its region; kept in the snapshot, so a resume keeps it)."""
