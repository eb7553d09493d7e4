"""What counts as a backchannel ("mm-hm", "yeah, right"), and a session's switch for telling one
from an interruption (``turn_detection.voicemesh_backchannel``): ``edge/realtime/backchannel.py``
acts on them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from edge.shared.errors import InvalidParam

FLAG = "voicemesh_backchannel"
PARAM = f"session.audio.input.turn_detection.{FLAG}"

_WORD = re.compile(r"[a-z]+(?:[-'][a-z]+)*")


def words_of(transcript: str) -> list[str]:
    """The transcript's words, lowercased, without the punctuation around them ("Mm-hmm." -> "mm-hmm")."""
    return _WORD.findall(transcript.lower())


def is_backchannel(transcript: str, vocabulary: Iterable[str]) -> bool:
    """Only backchannel words: the caller acknowledged, they did not ask for anything. No words at all
    (a cough, a breath Whisper heard nothing in) count too: nothing asked the answer to stop."""
    allowed = {w.lower() for w in vocabulary}
    return all(word in allowed for word in words_of(transcript))


def backchannel_flag(turn_detection: Any) -> bool | None:
    """A client's ``turn_detection.voicemesh_backchannel`` (an extra field stock SDKs pass through
    and keep in ``session.updated``); ``None``: not given."""
    extra = getattr(turn_detection, "model_extra", None) or {}
    value = extra.get(FLAG)
    if value is None or isinstance(value, bool):
        return value
    raise InvalidParam(f"{PARAM} must be true or false, not {value!r}", param=PARAM)
