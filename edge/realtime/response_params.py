"""What one response is asked for, and what it answers.

``response_params()`` checks a ``response.create``'s parameters against the edge's limits (every one
before anything starts: a bad one is an ``error`` naming its param and no response) and fills the
rest from the session; a response the VAD starts gets the session's own. ``answer_input()`` picks
what the response answers:

* ``input`` items: those messages, instead of the conversation (its last user message is the turn);
* ``conversation: "none"``: the conversation's history as context, its pending input left pending,
  and nothing the response says added to it (out of band);
* else the conversation's pending input; with none (a greeting: LiveKit's
  ``generate_reply(instructions=...)``), a turn with no user words, answered from the instructions
  and the history (``TurnStart.text == ""``, which the region answers as such).

``max_output_tokens: "inf"`` is the edge's cap, lowered to what the model's context leaves beside
the instructions and the turn; the history then gets what is left (``edge.shared.limits.fit_history``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from openai.types.realtime.conversation_item import ConversationItem
from openai.types.realtime.realtime_response_create_params import RealtimeResponseCreateParams

from edge.realtime.conversation import Conversation
from edge.realtime.conversation_items import UserTurn
from edge.realtime.session_update import output_modalities, speaks
from edge.responses.params import ResponseParams
from edge.responses.response_tools import check_tool_choice, check_tools, tools_object
from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.limits import check_range, check_text, estimate_tokens, fit_history
from edge.shared.settings import ContentLimits, EdgeSettings
from edge.shared.state import SessionState
from edge.tenancy.session_tenancy import check_voice_allowed
from wire.errors import BadEvent
from wire.turn import Message, TurnStart
from wire.voices import CustomVoice

MAX_METADATA_KEYS = 16
MAX_METADATA_KEY_CHARS = 64
MAX_METADATA_VALUE_CHARS = 512
"""OpenAI's bounds on ``metadata`` (``openai.types.shared.Metadata``)."""


def response_params(
    params: RealtimeResponseCreateParams | None, state: SessionState, settings: EdgeSettings,
    *, voices: frozenset[str] | None = None, custom: CustomVoice | None = None,
) -> ResponseParams:  # fmt: skip
    """``response.create``'s ``response`` (``None``: the session's settings) checked; raises
    ``InvalidParam`` (or ``VoiceRefused``) naming the first bad param. ``voices``: the only ones the
    session's key may use (``None``: any of the edge's)."""
    limits = settings.limits.content
    voice, param = state.voice, "session.audio.output.voice"
    custom_voice = state.custom_voice
    if params is not None and params.audio is not None and params.audio.output is not None:
        asked = params.audio.output.voice
        if asked is not None:
            voice, param = asked if isinstance(asked, str) else asked.id, "response.audio.output.voice"
            check_text(voice, param, limits.max_voice_chars)
            custom_voice = custom  # resolved, and its use allowed, by the caller
            if custom is None:
                check_voice_allowed(voice, voices, param)
    base = ResponseParams(
        instructions=state.instructions,
        voice=voice,
        region_voice="" if custom_voice else settings.voices.region_voice(voice, param=param),
        custom_voice=custom_voice,
        max_output_tokens=state.max_output_tokens,
        output_audio=speaks(state.output_modalities),
        tools=list(state.tools),
        tool_choice=state.tool_choice,
    )
    if params is None:
        return base
    instructions = base.instructions
    if params.instructions is not None:
        check_text(params.instructions, "response.instructions", limits.max_instructions_chars)
        instructions = params.instructions
    tokens = base.max_output_tokens
    if params.max_output_tokens is not None:
        tokens = params.max_output_tokens
        if tokens != "inf":
            check_range(tokens, "response.max_output_tokens", 1, limits.max_output_tokens)
    conversation = params.conversation
    if conversation not in (None, "auto", "none"):
        raise InvalidParam(
            f"conversation {conversation!r} is not served here: use 'auto' or 'none'",
            param="response.conversation",
        )
    output_audio = base.output_audio
    if params.output_modalities is not None:
        output_audio = speaks(output_modalities(params.output_modalities, "response.output_modalities"))
    items = None
    if params.input is not None:
        items = input_messages(params.input, limits, settings.limits.max_history_messages)
    tools = base.tools
    if params.tools is not None:
        tools = check_tools(params.tools, "response.tools", limits)
    tool_choice = base.tool_choice
    if params.tool_choice is not None:
        tool_choice = check_tool_choice(params.tool_choice, tools, "response.tool_choice")
    elif params.tools is not None:
        tool_choice = "auto"  # the session's choice was about the session's tools
    return dataclasses.replace(
        base,
        instructions=instructions,
        max_output_tokens=tokens,
        metadata=check_metadata(params.metadata),
        out_of_band=conversation == "none",
        input=items,
        output_audio=output_audio,
        tools=tools,
        tool_choice=tool_choice,
    )


def check_metadata(metadata: dict[str, str] | None, param: str = "response.metadata") -> dict[str, str]:
    """At most 16 string pairs, keys up to 64 characters and values up to 512 (OpenAI's bounds)."""
    if not metadata:
        return {}
    if len(metadata) > MAX_METADATA_KEYS:
        raise InvalidParam(f"{param} has {len(metadata)} keys; the limit is {MAX_METADATA_KEYS}", param=param)
    for key, value in metadata.items():
        check_text(key, param, MAX_METADATA_KEY_CHARS)
        check_text(value, f"{param}.{key}", MAX_METADATA_VALUE_CHARS)
    return dict(metadata)


def input_messages(items: Sequence[ConversationItem], limits: ContentLimits, max_items: int) -> list[Message]:
    """``response.input``: user and assistant text messages (as ``conversation.item.create`` takes
    them; a client's ``system`` message is refused there too)."""
    if len(items) > max_items:
        raise InvalidParam(
            f"response.input has {len(items)} items; the limit is {max_items}", param="response.input"
        )
    messages = []
    for i, item in enumerate(items):
        param = f"response.input.{i}"
        if item.type != "message":
            raise InvalidParam(f"{param}: items of type {item.type!r} are not supported", param=param)
        if item.role == "system":
            raise InvalidParam(
                f"{param}: system messages cannot be sent by a client: use `instructions`",
                param=f"{param}.role",
            )
        texts = [getattr(c, "text", None) or getattr(c, "transcript", None) for c in item.content]
        text = " ".join(t for t in texts if t)
        if not text:
            raise InvalidParam(f"{param}: a message needs text content", param=f"{param}.content")
        check_text(text, f"{param}.content", limits.max_text_chars)
        messages.append(Message(role=item.role, content=text))
    return messages


def answer_input(params: ResponseParams, conversation: Conversation, state: SessionState) -> UserTurn:
    """What the response answers (see the module docstring), before fitting to the context."""
    if params.input is not None:
        history = list(params.input)
        text = history.pop().content if history and history[-1].role == "user" else ""
        return UserTurn(history=history, text=text)
    if not params.out_of_band:
        try:
            return conversation.take_turn()
        except BadEvent as exc:
            if exc.code != "no_input":
                raise
    return UserTurn(history=list(state.history), text="")  # no user words: a greeting


def fit_turn(turn: UserTurn, params: ResponseParams, limits: ContentLimits) -> tuple[UserTurn, int]:
    """``turn`` with the history that fits the context beside the response's instructions, the turn
    and the answer, and the answer's token budget (``"inf"``: the cap, or the context's room)."""
    fixed: tuple[str, ...] = (params.instructions, turn.text or "")
    if params.tools:  # their schemas go into the prompt (or the grammar) too
        fixed += (json.dumps(tools_object(params.tools)),)
    if params.max_output_tokens == "inf":
        room = limits.context_tokens - limits.reserved_tokens - sum(estimate_tokens(t) for t in fixed)
        tokens = max(1, min(limits.max_output_tokens, room))
    else:
        tokens = params.max_output_tokens
    history = fit_history(turn.history, fixed=fixed, max_output_tokens=tokens, limits=limits)
    return dataclasses.replace(turn, history=history), tokens


def turn_start(
    params: ResponseParams, turn: UserTurn, state: SessionState, limits: ContentLimits
) -> tuple[TurnStart, UserTurn]:
    """What the router is asked for ``turn``, with the history that fits (``fit_turn``)."""
    turn, max_output_tokens = fit_turn(turn, params, limits)
    start = TurnStart(
        turn_id=new_id("turn"),
        voice=params.region_voice,
        instructions=params.instructions,
        history=turn.history,
        text=turn.text,
        transcript=turn.transcript,  # known from input transcription: no second STT
        max_output_tokens=max_output_tokens,
        temperature=state.temperature,
        output_audio=params.output_audio,
        tools=params.tools,
        tool_choice=params.tool_choice,
        priority=state.priority,
        custom_voice=params.custom_voice,
    )
    return start, turn
