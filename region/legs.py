"""The first clause gets the cores: an answer decoded in two legs, with a hold between them.

Where the LLM and TTS share CPU cores (the cpu profile), vLLM decoding the rest of an answer slows
the synthesis of its first clause 2-2.5x (Kokoro on four words: 1.45 s alone, 3.5 s beside
decoding; docs/benchmarks.md). So the first leg is stopped after ``cap`` tokens, enough for the
first clause; the second leg starts once that clause's audio is ready (``ready``), and continues the
assistant message from the text of the first (vLLM's ``continue_final_message``, as a failover
does). An answer that ends within the first leg costs nothing more; the tokens of both legs are
counted as one answer's.

The first leg asks for the turn's whole ``max_output_tokens`` and is aborted after ``cap`` tokens
(``LlmClient.stream``'s ``stop_after``, counted by the server): vLLM checks and refuses the whole
request before the first word, as it does for a turn in one leg. It is aborted where the next word
would start, so its text ends at a word's end, and the second leg starts with that word (the client
puts back the space vLLM drops there, as after a failover). Only a first leg that was cut (its
usage a ``Cut``) has a second: one that ran past ``cap`` and ended by itself is the whole answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import msgspec

from region.protocols import Cut, LlmClient
from wire.turn import TokenUsage, ToolCall, TurnStart


def holds(start: TurnStart, cap: int) -> bool:
    """Whether a turn is decoded in legs: only a spoken answer without tools (a call's arguments
    are not split across requests) that may run past the first leg."""
    return cap > 0 and start.output_audio and not start.tools and start.max_output_tokens > cap


async def in_legs(
    llm: LlmClient, start: TurnStart, user_text: str, cap: int, ready: Callable[[], Awaitable[None]]
) -> AsyncIterator[str | ToolCall | TokenUsage]:
    """``llm.stream(start, user_text)``, decoded as two legs with ``await ready()`` between them."""
    text = ""
    used: TokenUsage | None = None
    async for piece in llm.stream(start, user_text, stop_after=cap):
        if isinstance(piece, TokenUsage):
            used = piece
            continue
        if isinstance(piece, str):
            text += piece
        yield piece
    if not isinstance(used, Cut):
        if used is not None:
            yield used  # the answer ended by itself (or the server counted nothing: no second leg)
        return
    await ready()
    # No visible text yet (a leg spent inside a <think> block): nothing to continue from, so the
    # answer is asked for whole; else the second leg continues the first's words.
    rest = msgspec.structs.replace(
        start,
        heard_text=start.heard_text + text,
        max_output_tokens=start.max_output_tokens - (used.output_tokens if text else 0),
    )
    async for piece in llm.stream(rest, user_text):
        if isinstance(piece, TokenUsage):
            # The second leg's prompt repeats the first's words: the user's input is the first's.
            yield TokenUsage(
                input_tokens=used.input_tokens, output_tokens=used.output_tokens + piece.output_tokens
            )
            continue
        yield piece
