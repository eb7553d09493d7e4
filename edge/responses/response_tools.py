"""Function calling at the edge: the client's ``tools`` and ``tool_choice`` (from ``session.update``
or ``response.create``) checked into the turn protocol's shapes, and back into the API's for
``session.updated``; the ``function_call`` item a response emits.

A tool's ``parameters`` must be a JSON Schema (``jsonschema`` checks it here, so a bad schema is the
client's ``error`` at ``session.update``, not a failed turn later). Only ``function`` tools are
served (MCP tools are refused by name). The call ids a client sees are the edge's own
(``new_call_id``), given when a region's call arrives whole: a region's re-generation after a
failover can never repeat an id the client has seen.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import jsonschema
import msgspec

from edge.shared.errors import InvalidParam
from edge.shared.events import new_id
from edge.shared.limits import check_text
from edge.shared.settings import ContentLimits
from wire.turn import NamedTool, Tool, ToolChoice

MAX_TOOLS = 64
MAX_TOOL_NAME_CHARS = 64
"""OpenAI's bound on a function name."""
MAX_TOOL_SCHEMA_CHARS = 8_000
"""One tool's ``parameters`` as JSON: the schema goes into the model's context (or its grammar)."""
TOOL_CHOICES = ("auto", "none", "required")


def new_call_id() -> str:
    return new_id("call")


def check_tools(tools: Sequence[Any], param: str, limits: ContentLimits) -> list[Tool]:
    """The client's ``tools`` (the SDK's models) as ``wire.turn.Tool``s; ``InvalidParam`` naming the
    first bad one."""
    if len(tools) > MAX_TOOLS:
        raise InvalidParam(f"{param} has {len(tools)} tools; the limit is {MAX_TOOLS}", param=param)
    out: list[Tool] = []
    for i, tool in enumerate(tools):
        where = f"{param}.{i}"
        if getattr(tool, "type", None) not in (None, "function"):
            raise InvalidParam(
                f"{where}: tools of type {tool.type!r} are not served here: use 'function'",
                param=f"{where}.type",
                code="unsupported_tool_type",
            )
        name = getattr(tool, "name", None)
        if not name:
            raise InvalidParam(f"{where}: a function tool needs a name", param=f"{where}.name")
        check_text(name, f"{where}.name", MAX_TOOL_NAME_CHARS)
        if any(t.name == name for t in out):
            raise InvalidParam(f"{where}: a second tool named {name!r}", param=f"{where}.name")
        description = tool.description or ""
        check_text(description, f"{where}.description", limits.max_instructions_chars)
        schema = tool.parameters if tool.parameters is not None else {}
        out.append(Tool(name=name, description=description, parameters=check_schema(schema, where)))
    return out


def check_schema(schema: Any, where: str) -> dict[str, Any]:
    param = f"{where}.parameters"
    if not isinstance(schema, dict):
        raise InvalidParam(f"{param} must be a JSON Schema object", param=param)
    if len(json.dumps(schema)) > MAX_TOOL_SCHEMA_CHARS:
        raise InvalidParam(f"{param} is over {MAX_TOOL_SCHEMA_CHARS} characters as JSON", param=param)
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidParam(f"{param} is not a valid JSON Schema: {exc.message}"[:300], param=param) from None
    return schema


def check_tool_choice(choice: Any, tools: Sequence[Tool], param: str) -> ToolChoice:
    """``"auto"``, ``"none"``, ``"required"`` or ``{"type": "function", "name": ...}`` naming one of
    ``tools`` (the ones in force for the session or the response). ``"required"`` with no tools is
    accepted (Pipecat sets it before it sends its tools) and asks for nothing until tools come."""
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise InvalidParam(f"{param}: {choice!r} is not one of {', '.join(TOOL_CHOICES)}", param=param)
        return choice  # type: ignore[return-value]
    if getattr(choice, "type", None) != "function":
        raise InvalidParam(f"{param}: only function tools can be chosen", param=param)
    name = choice.name
    if not any(t.name == name for t in tools):
        raise InvalidParam(f"{param}: {name!r} is not one of the tools", param=f"{param}.name")
    return NamedTool(name=name)


def tools_object(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """``tools`` as the API shows them (``session.updated``, ``response`` objects)."""
    return [{"type": "function", **msgspec.structs.asdict(t)} for t in tools]


def tool_choice_object(choice: ToolChoice) -> str | dict[str, str]:
    return {"type": "function", "name": choice.name} if isinstance(choice, NamedTool) else choice


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    """A ``function_call`` ``realtime.item``."""
    return {
        "id": item_id,
        "object": "realtime.item",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }
