"""Callers that call a function every turn: the weather tool they call, and the SLO on their calls.

The last ``tool_callers`` callers name the tool in the session's ``tool_choice``: the first response
of the turn is the call, the caller feeds its output back and asks for the spoken answer
(``tool_choice: "none"``), which completes the turn. Every call id seen is kept per turn
(``CallerState.calls``), and ``tool_call_verdicts`` counts calls lost (a tool turn a region served
with no call) and duplicated (a second call in a turn, or an id seen twice): the SLO is zero of each,
failover or not. A turn the edge's fallback voice answered has no call by design.
"""

from __future__ import annotations

import json
from typing import Any

from voicemesh.drills.caller_state import CallerState
from voicemesh.drills.slo import Verdict

WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
WEATHER_OUTPUT = json.dumps({"sky": "sunny", "temperature_c": 21})
TOOL_CALL_TOKENS = 128


def tool_call_counts(state: CallerState) -> dict[str, int]:
    """Over the tool callers' turns: how many, calls lost (a turn no fallback answered, with no call)
    and calls duplicated (calls past the first in a turn, ids seen twice included)."""
    turns = [r for r in state.records if r.caller in state.tool_callers and r.status != "not_started"]
    lost = duplicated = 0
    for r in turns:
        ids = state.calls.get((r.caller, r.turn), [])
        lost += not ids and not r.degraded
        duplicated += max(len(ids) - 1, 0)
    return {"tool_turns": len(turns), "calls_lost": lost, "calls_duplicated": duplicated}


def tool_call_verdicts(state: CallerState) -> list[Verdict]:
    """The SLO on function calls (zero lost, zero duplicated); none without tool callers."""
    if not state.tool_callers:
        return []
    n = tool_call_counts(state)
    of = f"of {n['tool_turns']} tool-calling turns"
    return [
        Verdict("calls_lost", "function calls lost = 0", f"{n['calls_lost']} {of}", n["calls_lost"] == 0),
        Verdict(
            "calls_duplicated",
            "function calls duplicated = 0",
            f"{n['calls_duplicated']} {of}",
            n["calls_duplicated"] == 0,
        ),
    ]
