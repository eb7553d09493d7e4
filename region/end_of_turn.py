"""How likely the user's words end their turn, from the LLM the region already serves.

``semantic_vad`` (``edge/realtime/semantic_turns.py``) asks it of a turn started at a pause: the chat
is the answer's own (``region.llm.build_messages``: system prompt, history, the user's words), with
the template applied up to the end of the user's words and nothing after (vLLM's
``continue_final_message``), and one token asked for with its 20 likeliest alternatives. The
probability that the words end there is that of the template's end-of-message token
(``LlmSettings.end_of_turn_token``: ``<|im_end|>`` for SmolLM2 and Qwen3) plus that of a sentence's
end (``. ? !``): Whisper's last full stop (comma, colon...) is taken off first, because Whisper ends
a cut-off half with one too, and a small model then calls it finished; a question mark is kept
(Whisper hears a question, and it saved a misheard "What is the capital and friends?": 0.003
without it, 0.64 with it). A token not among the 20 likeliest
counts 0 (it is below the 20th's probability). LiveKit's turn detector reads an LM the same way.

Any failure (vLLM down, slow, an answer of another shape) is ``None``: the edge then decides from
the audio (Smart Turn) and its eagerness timeout; the turn itself goes on.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import httpx

from region.llm import VllmClient, build_messages
from wire.turn import TurnStart

log = logging.getLogger(__name__)

TOP_LOGPROBS = 20
"""vLLM's default ``--max-logprobs``."""
SENTENCE_ENDS = frozenset(".?!")
TRANSCRIBED_ENDS = " \t\n.,;:…"
"""What Whisper may end a transcript with that the user did not say: taken off before asking."""
TIMEOUT_S = 10.0
"""At most this for the answer (one token's prefill): the edge waits for it no longer than its
eagerness timeout anyway."""


def request_body(llm: VllmClient, start: TurnStart, user_text: str) -> dict[str, Any]:
    words = user_text.rstrip(TRANSCRIBED_ENDS)
    body: dict[str, Any] = {
        "model": llm.settings.served_name,
        "messages": build_messages(start, llm.system_prompt, words),
        "continue_final_message": True,  # the user's message left open: no end-of-message token
        "add_generation_prompt": False,
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": True,
        "top_logprobs": TOP_LOGPROBS,
    }
    if llm.settings.chat_template_kwargs:
        body["chat_template_kwargs"] = dict(llm.settings.chat_template_kwargs)
    return body


def ending(answer: dict[str, Any], end_token: str) -> float:
    """The probability of the end-of-message token or a sentence's end in vLLM's answer; raises
    ``KeyError``/``IndexError``/``TypeError``/``ValueError`` on an answer of another shape."""
    top = answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    total = 0.0
    for alt in top:
        token = str(alt["token"])
        if token == end_token or token.strip() in SENTENCE_ENDS:
            total += math.exp(float(alt["logprob"]))
    return min(1.0, total)


class VllmEndOfTurn:
    """``region.protocols.EndOfTurnModel`` on the region's vLLM (its client's connections and settings)."""

    def __init__(self, llm: VllmClient) -> None:
        self.llm = llm

    async def probability(self, start: TurnStart, user_text: str) -> float | None:
        if not user_text.strip():
            return None
        try:
            with self.llm.workload.running("end_of_turn"):
                r = await self.llm.http.post(
                    "/chat/completions", json=request_body(self.llm, start, user_text), timeout=TIMEOUT_S
                )
            if r.status_code != 200:
                log.warning("end of turn: vLLM answered %d: %s", r.status_code, r.text[:200])
                return None
            return round(ending(r.json(), self.llm.settings.end_of_turn_token), 4)
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            log.warning("end of turn: no answer from vLLM (%r): the edge decides without it", exc)
            return None
