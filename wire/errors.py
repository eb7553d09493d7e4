"""The voicemesh exception hierarchy, shared by every tier.

Each error carries a stable ``code`` that is sent on the wire (region ``error`` events, Realtime
``error`` events, HTTP problem bodies), so a caller can act on it without parsing prose.

Whose fault it is follows from the class: a ``ProtocolError`` is the client's (never retried on
another region, never counted by a breaker, answered with an ``error`` event); a ``RegionError`` is
the region's (the router fails over and counts it). A region reports an error by its code only;
``decode_error`` turns the code back into its class through ``ERRORS_BY_CODE``, which is built from
the classes below, so every error a region can send about a request must be declared here.

* VoicemeshError
  * ProtocolError - the peer sent something we cannot act on (answered, never fatal to others)
    * BadEvent - malformed JSON, unknown event type, missing or ill-typed field
      * TextTooLong - a text field is over the region's character limit
      * TurnInProgress - a ``turn.start`` on a connection whose turn is still running
    * BadAudio - wrong format or rate, empty, odd byte count, oversized
    * UnknownVoice - the voice is not one this region or edge can speak
    * HistoryTooLong - the conversation history exceeds the configured limit
    * LlmRefused - the LLM server refused the request as invalid (HTTP 4xx: prompt over the
      model's context, max tokens out of range)
    * InvalidToolCall - the model's function call names no tool of the request, or its arguments
      do not validate against the tool's schema (reported, never passed on as a call)
  * RegionError - a region could not serve a turn; the router may fail over
    * RegionUnavailable - could not connect, or the connection failed
      * RegionDisconnected - the connection dropped while a turn was in flight
    * RegionBusy - the region's slots and queue are full
    * FirstByteTimeout - the region did not answer within its first-byte deadline
    * BreakerOpen - the region's circuit breaker refuses calls
  * ResidencyRefused - no region satisfies the session's data-residency limit
  * NoRegionAvailable - every allowed region failed; the turn degrades to the edge voice
  * ModelError - a model file is missing or damaged
    * ModelMissing
    * ModelCorrupt
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType


class VoicemeshError(Exception):
    """Base of every voicemesh error."""

    code = "internal_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ProtocolError(VoicemeshError):
    code = "invalid_request_error"


class BadEvent(ProtocolError):
    code = "invalid_event"


class TextTooLong(BadEvent):
    code = "text_too_long"


class TurnInProgress(BadEvent):
    """The sender broke one-turn-at-a-time: its fault (declared, so a router decoding the code never
    takes it for the region's and fails over)."""

    code = "turn_in_progress"


class BadAudio(ProtocolError):
    code = "invalid_audio"


class UnknownVoice(ProtocolError):
    code = "unknown_voice"


class HistoryTooLong(ProtocolError):
    code = "history_too_long"


class LlmRefused(ProtocolError):
    code = "llm_refused"


class InvalidToolCall(ProtocolError):
    """Not the region's failure: its model answered the request's tools wrongly, as another region's
    model would be asked to (no failover, no breaker count)."""

    code = "invalid_tool_call"


class RegionError(VoicemeshError):
    code = "region_error"

    def __init__(self, message: str, *, region: str = "", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.region = region


class RegionUnavailable(RegionError):
    code = "region_unavailable"


class RegionDisconnected(RegionUnavailable):
    code = "region_disconnected"


class RegionBusy(RegionError):
    code = "busy"

    def __init__(self, message: str, *, region: str = "", retry_after_s: float = 0.0) -> None:
        super().__init__(message, region=region)
        self.retry_after_s = retry_after_s


class FirstByteTimeout(RegionError):
    code = "first_byte_timeout"


class BreakerOpen(RegionError):
    code = "breaker_open"


class ResidencyRefused(VoicemeshError):
    code = "residency_refused"


class NoRegionAvailable(VoicemeshError):
    code = "no_region_available"


class ModelError(VoicemeshError):
    code = "model_error"


class ModelMissing(ModelError):
    code = "model_missing"


class ModelCorrupt(ModelError):
    code = "model_corrupt"


def _tree(cls: type[VoicemeshError]) -> Iterator[type[VoicemeshError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _tree(sub)


def _by_code() -> Mapping[str, type[VoicemeshError]]:
    classes = list(_tree(VoicemeshError))  # only this module's classes exist yet
    table = {cls.code: cls for cls in classes}
    if len(table) != len(classes):
        raise TypeError("two wire.errors classes share a code")
    return MappingProxyType(table)


ERRORS_BY_CODE = _by_code()
"""Every code of this module's classes -> its class (other modules' errors are not sent by code)."""


def decode_error(code: str, message: str, *, region: str = "") -> ProtocolError | RegionError:
    """The error a region reported by ``code``: its ``ProtocolError`` class when the request was at
    fault; otherwise a ``RegionError`` carrying that code (the region failed, whatever it called it)."""
    cls = ERRORS_BY_CODE.get(code)
    if cls is not None and issubclass(cls, ProtocolError):
        return cls(message)
    return RegionError(message, region=region, code=code)
