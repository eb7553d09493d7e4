"""A session's tenancy: the residency its turns are served in, its class in a region's queue, and
what a turn gets when no region of the residency can serve it (``docs/tenants.md``).

The key's policy (``edge/shared/key_policy.py``) sets all three. A session may narrow the key's residency,
never widen it: ``/v1/realtime?residency=eu,de`` (or a client secret minted with
``"voicemesh": {"residency": [...]}``). A residency outside the key's is refused with 403
(``residency_not_allowed``) before the socket opens. The result is kept in the session's state, so a
resume on any edge serves the session in the same residency (narrowed further if the resume asks).

Every turn of the session, responses and transcriptions alike, is routed with it
(``routing_of``); the router never ranks a region outside it, on failover either.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge.shared.errors import BadResidency, InvalidParam, NoRegionInResidency, ResidencyNotAllowed
from edge.shared.key_policy import InvalidPolicy, KeyPolicy, policy_from_claims
from edge.shared.state import SessionState
from router.api import ClientRefused, Degraded, SessionRouting
from wire.errors import NoRegionAvailable


def requested_residency(value: object) -> frozenset[str] | None:
    """A session's narrowing: ``"eu,de"``, ``"eu de"`` or ``["eu", "de"]``; ``None``: not asked."""
    if value is None:
        return None
    try:
        return policy_from_claims({"residency": value}).residency  # one parser for keys and sessions
    except InvalidPolicy as exc:
        raise BadResidency(f"residency: {exc}") from exc


def narrow(allowed: frozenset[str] | None, requested: frozenset[str] | None) -> frozenset[str] | None:
    """``requested`` when it lies inside ``allowed`` (``None`` = anywhere); raises
    ``ResidencyNotAllowed`` naming the tags outside it."""
    if requested is None:
        return allowed
    if allowed is not None and not requested <= allowed:
        outside = ", ".join(sorted(requested - allowed))
        raise ResidencyNotAllowed(
            f"residency {outside} is outside this key's residency ({', '.join(sorted(allowed))})"
        )
    return requested


@dataclass(frozen=True, slots=True)
class SessionTenancy:
    residency: frozenset[str] | None
    policy: KeyPolicy

    @classmethod
    def of(
        cls,
        policy: KeyPolicy,
        requested: object = None,
        *,
        minted: frozenset[str] | None = None,
        resumed: SessionState | None = None,
    ) -> SessionTenancy:
        """The key's residency, narrowed by the client secret's (``minted``), by the resumed
        session's (if any), then by ``requested`` (``?residency=``)."""
        allowed = narrow(policy.residency, minted)
        if resumed is not None and resumed.residency is not None:
            allowed = narrow(allowed, frozenset(resumed.residency))
        return cls(narrow(allowed, requested_residency(requested)), policy)

    def apply(self, state: SessionState) -> None:
        state.residency = None if self.residency is None else sorted(self.residency)
        state.priority = self.policy.priority
        state.on_no_region = self.policy.on_no_region


def routing_of(state: SessionState) -> SessionRouting:
    """What the router gets for every turn of the session."""
    residency = None if state.residency is None else frozenset(state.residency)
    return SessionRouting(session_id=state.id, residency=residency)


def vendor_session(state: SessionState) -> dict[str, object]:
    """The ``voicemesh`` field of ``session.created`` / ``session.updated``."""
    return {"residency": state.residency, "priority": state.priority, "on_no_region": state.on_no_region}


def refusal_for(state: SessionState, degraded: Degraded) -> ClientRefused | None:
    """The ``error`` a degraded turn ends with when the key says so (``on_no_region: error``);
    ``None``: the edge's own voice answers, as always."""
    if state.on_no_region != "error":
        return None
    if state.residency is None:
        where, code = "no region", NoRegionAvailable.code
    else:
        where = f"no region of this session's residency ({', '.join(state.residency)})"
        code = NoRegionInResidency.code
    message = f"{where} could serve this turn ({degraded.reason}); this key answers that with an error"
    return ClientRefused(code=code, message=message, error_type="server_error")


__all__ = [
    "SessionTenancy",
    "narrow",
    "refusal_for",
    "requested_residency",
    "routing_of",
    "vendor_session",
]


def check_voice_allowed(voice: str, voices: frozenset[str] | None, param: str) -> None:
    """``InvalidParam`` naming ``param`` when the key restricts its voices and ``voice`` is not one
    (``KeyPolicy.voices``); an alias counts by the name the client used."""
    if voices is not None and voice not in voices:
        allowed = ", ".join(f"'{v}'" for v in sorted(voices))
        raise InvalidParam(
            f"voice '{voice}' is not allowed for this API key: use one of {allowed}",
            param=param,
            code="voice_not_allowed",
        )
