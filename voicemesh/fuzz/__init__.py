"""``voicemesh fuzz``: generated bad input against a running edge (Realtime events, HTTP) and a
running region (the turn protocol), and the oracle it must meet: every bad input gets a clear
client error, never a hang, a 5xx or a ``server_error``, and the target still serves afterwards.

One module per job: ``oracle`` (the failure classes and checks), ``target`` (what is fuzzed),
``events``, ``http``, ``turns`` (strategies and one case each), ``health``, ``runner`` (Hypothesis,
bounded and seeded), ``suite`` (the fuzzers together, the summary). docs/security.md says how to
point it at a deployment.
"""

from voicemesh.fuzz.oracle import AuthBypass, Hang, OracleFailure, ServerFault, Unclear, Unhealthy
from voicemesh.fuzz.suite import FUZZERS, NotServing, Report, run
from voicemesh.fuzz.target import EdgeTarget, RegionTarget

__all__ = [
    "FUZZERS",
    "AuthBypass",
    "EdgeTarget",
    "Hang",
    "NotServing",
    "OracleFailure",
    "RegionTarget",
    "Report",
    "ServerFault",
    "Unclear",
    "Unhealthy",
    "run",
]
