"""Custom voices in a region: a turn's ``CustomVoice`` definition -> the Kokoro style it speaks with.

A blend is the weighted sum of the region's own voice styles (weights sum to 1, as the edge scales
them); an uploaded style is used as it is. Computing one is cheap but not free (an uploaded style
is ~0.7 MB of base64), and a voice speaks many clauses and turns: computed styles are kept by the
definition's content hash (``wire.voices.voice_digest``), a bounded LRU per region.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Collection

import numpy as np

from wire.errors import BadEvent, UnknownVoice
from wire.voices import STYLE_SHAPE, CustomVoice, check_blend, decode_style, voice_digest

log = logging.getLogger(__name__)

StyleOf = Callable[[str], np.ndarray]
"""A region voice's style by name (kokoro-onnx's ``get_voice_style``)."""


def check_custom(voice: CustomVoice, voices: Collection[str]) -> None:
    """``BadEvent`` for a definition that is neither a blend nor a style (or both), ``UnknownVoice``
    for a blend of voices this region lacks (an empty ``voices``: not loaded yet, accept it)."""
    if bool(voice.blend) == bool(voice.style):
        raise BadEvent(f"custom voice {voice.id!r} needs exactly one of `blend` and `style`")
    if voice.blend:
        check_blend(voice.blend)
        missing = sorted(set(voice.blend) - set(voices)) if voices else []
        if missing:
            raise UnknownVoice(
                f"custom voice {voice.id!r} blends {', '.join(missing)}, which this region lacks;"
                f" it speaks: {', '.join(sorted(voices))}"
            )


def blend_styles(blend: dict[str, float], style_of: StyleOf) -> np.ndarray:
    """``sum(weight * style)`` over the blend, in float32, shaped like one voice's style."""
    out = np.zeros(STYLE_SHAPE, dtype=np.float32)
    for name, weight in sorted(blend.items()):
        out += np.float32(weight) * np.asarray(style_of(name), dtype=np.float32).reshape(STYLE_SHAPE)
    return out


class StyleCache:
    """Computed custom styles by content digest, the least recently used dropped past ``max_entries``."""

    def __init__(self, max_entries: int = 64) -> None:
        self.max_entries = max_entries
        self._styles: OrderedDict[str, np.ndarray] = OrderedDict()
        self.computed = 0
        """Styles computed (misses): what a test reads to see the cache work."""

    def style(self, voice: CustomVoice, style_of: StyleOf) -> np.ndarray:
        digest = voice_digest(voice)
        found = self._styles.get(digest)
        if found is not None:
            self._styles.move_to_end(digest)
            return found
        style = blend_styles(voice.blend, style_of) if voice.blend else decode_style(voice.style)
        self.computed += 1
        # Said once per definition and region: which custom voice this region was given (the
        # failover drill reads it to see the definition reach the next region).
        log.info(
            "custom voice %s: style %s computed (%s)",
            voice.id,
            digest[:16],
            "blend" if voice.blend else "upload",
        )
        self._styles[digest] = style
        while len(self._styles) > self.max_entries:
            self._styles.popitem(last=False)
        return style


__all__ = ["StyleCache", "StyleOf", "blend_styles", "check_custom"]
