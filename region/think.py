"""Drop ``<think>...</think>`` blocks from streamed model text, even when a tag is split across deltas.

Reasoning models (Qwen3) may think out loud even with thinking disabled (an empty block, or a
model that ignores the template flag); none of that may reach TTS or the user.
"""

from __future__ import annotations

OPEN, CLOSE = "<think>", "</think>"


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that could be the start of ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-n:]):
            return n
    return 0


class ThinkFilter:
    def __init__(self) -> None:
        self._buf = ""
        self._inside = False
        self._started = False

    def feed(self, delta: str) -> str:
        """Return the visible part of ``delta`` (may be empty while a tag might be forming)."""
        self._buf += delta
        out: list[str] = []
        while True:
            if self._inside:
                j = self._buf.find(CLOSE)
                if j < 0:
                    keep = _partial_suffix(self._buf, CLOSE)
                    self._buf = self._buf[len(self._buf) - keep :]
                    break
                self._buf = self._buf[j + len(CLOSE) :]
                self._inside = False
                continue
            i = self._buf.find(OPEN)
            if i >= 0:
                out.append(self._visible(self._buf[:i]))
                self._buf = self._buf[i + len(OPEN) :]
                self._inside = True
                continue
            keep = _partial_suffix(self._buf, OPEN)
            out.append(self._visible(self._buf[: len(self._buf) - keep]))
            self._buf = self._buf[len(self._buf) - keep :]
            break
        return "".join(out)

    def flush(self) -> str:
        """End of stream: a held partial tag was text after all; an unclosed block is dropped."""
        rest, self._buf = ("" if self._inside else self._buf), ""
        return self._visible(rest)

    def _visible(self, text: str) -> str:
        # The answer starts at its first word: not with the blank lines a model puts after "</think>".
        if not self._started:
            text = text.lstrip()
            self._started = bool(text)
        return text
