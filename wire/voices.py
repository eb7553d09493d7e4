"""Custom voices on the wire: a voice's definition, carried by every turn that speaks with it.

A custom voice (``POST /v1/voices`` at the edge) is either a weighted blend of a region's Kokoro
voice styles or an uploaded style vector. Its definition travels inside ``TurnStart.custom_voice``,
so no region needs shared storage: a region that starts after the voice was made has it, and a
turn that fails over carries it to the next region. Regions cache the computed style by
``voice_digest`` (the definition's content hash); the edge's speech cache keys by it too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math

import msgspec
import numpy as np

from wire.errors import BadEvent

STYLE_SHAPE = (510, 1, 256)
"""A Kokoro-82M voice style: one 256-wide vector per token count (kokoro-onnx's ``voices.npz``)."""
STYLE_BYTES = 510 * 256 * 4
"""An uploaded style as float32 little-endian bytes."""
MAX_BLEND_VOICES = 8
MAX_STYLE_ABS = 64.0
"""Kokoro's styles stay within a few units; a value past this is not a style (and a NaN never is)."""


class CustomVoice(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A custom voice's definition: ``blend`` (region voice -> weight, weights summing to 1) or
    ``style`` (base64 of float32 little-endian, ``STYLE_SHAPE``), exactly one of them."""

    id: str
    blend: dict[str, float] = msgspec.field(default_factory=dict)
    style: str = ""


def voice_digest(voice: CustomVoice) -> str:
    """The definition's content hash (the id and name are not content: two voices defined alike
    sound alike and share a cache entry)."""
    h = hashlib.sha256()
    h.update(json.dumps(sorted(voice.blend.items())).encode())
    h.update(b"\0")
    h.update(voice.style.encode())
    return h.hexdigest()


def check_blend(blend: dict[str, float]) -> dict[str, float]:
    """The blend with its weights scaled to sum to 1; ``BadEvent`` for an empty blend, too many
    voices, or a weight that is not a positive finite number."""
    if not blend:
        raise BadEvent("a blend needs at least one voice")
    if len(blend) > MAX_BLEND_VOICES:
        raise BadEvent(f"a blend has at most {MAX_BLEND_VOICES} voices, got {len(blend)}")
    bad = [v for v, w in blend.items() if isinstance(w, bool) or not math.isfinite(w) or w <= 0]
    if bad:
        raise BadEvent(f"blend weights must be positive numbers: {', '.join(sorted(bad))}")
    total = sum(blend.values())
    return {v: w / total for v, w in sorted(blend.items())}


def decode_style(style: str) -> np.ndarray:
    """An uploaded style (base64 float32 LE) as a ``STYLE_SHAPE`` array; ``BadEvent`` when it is not
    base64, not ``STYLE_BYTES`` long, or holds values no style has (NaN, inf, huge)."""
    try:
        raw = base64.b64decode(style, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadEvent("the style is not base64") from exc
    if len(raw) != STYLE_BYTES:
        raise BadEvent(
            f"a style is {STYLE_BYTES} bytes (float32 little-endian, shape {STYLE_SHAPE}); got {len(raw)}"
        )
    array = np.frombuffer(raw, dtype="<f4").astype(np.float32).reshape(STYLE_SHAPE)
    if not np.isfinite(array).all() or float(np.abs(array).max()) > MAX_STYLE_ABS:
        raise BadEvent(f"a style's values must be finite and within ±{MAX_STYLE_ABS:g}")
    return array


def encode_style(array: np.ndarray) -> str:
    """A style array (``STYLE_SHAPE``, or 510 x 256) as the base64 ``decode_style`` reads."""
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f4").tobytes()).decode()


__all__ = [
    "MAX_BLEND_VOICES",
    "STYLE_BYTES",
    "STYLE_SHAPE",
    "CustomVoice",
    "check_blend",
    "decode_style",
    "encode_style",
    "voice_digest",
]
