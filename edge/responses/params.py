"""What one response is asked for: the parameters a response runs with, once checked
(``edge/realtime/response_params.py`` checks and fills them from the session)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from wire.turn import Message, Tool, ToolChoice
from wire.voices import CustomVoice


@dataclass(frozen=True)
class ResponseParams:
    instructions: str
    voice: str
    """The voice as the client named it (echoed in the response)."""
    region_voice: str
    """What the region speaks it with (``edge/shared/voices.py``); ``""`` with a custom voice."""
    max_output_tokens: int | Literal["inf"]
    metadata: dict[str, str] = field(default_factory=dict)
    """The client's ``response.metadata``, echoed in ``response.created`` and ``response.done``."""
    out_of_band: bool = False
    """``conversation: "none"``: the response is not added to the conversation."""
    input: list[Message] | None = None
    """``input`` items: the response answers these instead of the conversation."""
    output_audio: bool = True
    """``output_modalities`` ``["audio"]``; ``False`` for ``["text"]``: text only, nothing synthesised."""
    tools: list[Tool] = field(default_factory=list)
    """The session's tools, or the response's own (``response.create`` ``tools``)."""
    tool_choice: ToolChoice = "auto"
    custom_voice: CustomVoice | None = None
    """A custom voice's definition (``edge/speech/custom_voices.py``): the turn carries it to its region."""
