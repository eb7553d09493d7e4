"""The LLM stage: vLLM's OpenAI-compatible chat API, streamed over httpx.

Closing the stream (``aclose()`` on the generator, or cancelling its consumer) closes the HTTP
connection mid-response, which vLLM takes as an abort: the request stops using the engine.

vLLM answers a request it finds invalid (a prompt over the model's context, max tokens out of range)
with a 4xx: that is the client's error (``LlmRefused``, vLLM's message kept), which another region
would refuse the same way. Any other failure is this region's (``LlmError``, a ``RegionError``: the
router fails over): a refused connection (``LlmUnreachable``: vLLM's process is gone), a stream that
breaks mid-answer (vLLM died while writing: ``_broken``), a 5xx, a chunk that is not JSON.

With tools, the stream ends with the answer's function calls (``ToolCall``), whole: how they are
asked for and checked is ``region/tools.py``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx

from region import tracing
from region.protocols import Cut, LlmError, LlmUnreachable
from region.settings import LlmSettings
from region.think import ThinkFilter
from region.tools import CallAssembler, chat_message, chat_tools, forced_call, forced_prompt, forced_schema
from region.tools import request_mode as tool_mode
from region.workload import Workload
from wire.errors import InvalidToolCall, LlmRefused
from wire.turn import NamedTool, TokenUsage, ToolCall, TurnStart

FORCED_CALL_TRIES = 2
CHECK_TIMEOUT_S = 3.0
"""``check``'s answer time: vLLM lists its models at once unless its API server is stuck."""

REQUEST_ERROR_STATUSES = frozenset({400, 413, 422})
"""What vLLM answers when the request itself is wrong (bad input, too large, fails validation)."""


def _refusal(status: int, body: bytes) -> LlmRefused | LlmError:
    """The error for a non-200 answer: the client's for a request error, else the region's."""
    detail = body.decode(errors="replace")
    try:  # vLLM's error body: {"object": "error", "message": ..., ...} (or {"error": {...}})
        parsed = json.loads(detail)
        err = parsed.get("error", parsed) if isinstance(parsed, dict) else {}
        message = err.get("message") if isinstance(err, dict) else None
        detail = message if isinstance(message, str) and message else detail
    except ValueError:
        pass
    detail = detail[:300]
    if status in REQUEST_ERROR_STATUSES:
        return LlmRefused(f"the model refused the request: {detail}")
    return LlmError(f"vLLM answered {status}: {detail}")


def _broken(url: str, exc: httpx.HTTPError, *, streaming: bool) -> LlmError:
    """The region's error for a transport failure talking to the LLM at ``url``."""
    if isinstance(exc, httpx.ConnectError):
        return LlmUnreachable(
            f"LLM at {url} is unreachable (connection refused: is its process up?): {exc!r}"
        )
    if streaming:
        return LlmError(f"LLM at {url} broke off its answer mid-stream: {exc!r}")
    return LlmError(f"LLM at {url} failed: {exc!r}")


LEANS_BACK = frozenset(",.;:!?…%)]}'’”")
"""What a continuation may start with that joins the word before it without a space ("," "'s")."""


def spaced(heard: str, piece: str) -> str:
    """The first visible piece of a continuation of ``heard`` (``continue_final_message``): vLLM
    drops the space its first word starts with ("satellite" + "in the", "France." + "It's"), so it
    goes back unless ``heard`` ends with one or the piece leans on the word before (``LEANS_BACK``).
    ``heard`` ends at a word's end (a failover's clauses, a first leg cut before a word: ``stream``),
    so a space is what the answer in one go had there."""
    if heard and not heard[-1].isspace() and piece[:1] not in LEANS_BACK:
        return " " + piece
    return piece


def build_messages(start: TurnStart, system_prompt: str, user_text: str) -> list[dict[str, Any]]:
    """The chat for one turn: system prompt (+ instructions, + the tools of a forced call), history
    (with earlier calls and their results), the user's words, and, after a failover, what the user
    already heard as the start of the assistant's answer."""
    system = system_prompt + (f"\n\n{start.instructions}" if start.instructions else "")
    if tool_mode(start) == "forced":
        system += f"\n\n{forced_prompt(start)}"
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    messages += [chat_message(m) for m in start.history]
    if user_text:  # no user words: a greeting, answered from the instructions and the history
        messages.append({"role": "user", "content": user_text})
    if start.heard_text:
        messages.append({"role": "assistant", "content": start.heard_text})
    return messages


class VllmClient:
    """``LlmClient`` for vLLM (OpenAI chat completions plus vLLM's continuation flags)."""

    def __init__(
        self, settings: LlmSettings, url: str, *, system_prompt: str, workload: Workload | None = None
    ) -> None:
        self.settings = settings
        self.workload = workload or Workload()
        self.url = url.rstrip("/")
        self.system_prompt = system_prompt
        # A read timeout bounds the gap between tokens, not the whole answer.
        self._http = httpx.AsyncClient(
            base_url=self.url,
            timeout=httpx.Timeout(30.0, connect=5.0),
            limits=httpx.Limits(max_keepalive_connections=8),
        )
        self.ready = False

    @property
    def http(self) -> httpx.AsyncClient:
        """The connections to vLLM (``region/end_of_turn.py`` asks it too)."""
        return self._http

    def request_body(self, start: TurnStart, user_text: str, *, counted: bool = False) -> dict[str, Any]:
        """``counted``: every chunk carries the tokens so far (vLLM's ``continuous_usage_stats``)."""
        usage = {"include_usage": True} | ({"continuous_usage_stats": True} if counted else {})
        body: dict[str, Any] = {
            "model": self.settings.served_name,
            "messages": build_messages(start, self.system_prompt, user_text),
            "stream": True,
            "stream_options": usage,  # the last chunk (or each: ``counted``) counts the tokens
            "max_tokens": start.max_output_tokens,
            "temperature": start.temperature,
        }
        if start.heard_text:
            # Continue the assistant message the user already heard instead of starting a new one.
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        if self.settings.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(self.settings.chat_template_kwargs)
        mode = tool_mode(start)
        if mode == "auto":
            body["tools"] = chat_tools(start.tools)
            body["tool_choice"] = "auto"
        elif mode == "forced":
            name = start.tool_choice.name if isinstance(start.tool_choice, NamedTool) else "call"
            schema = {"name": name, "schema": forced_schema(start)}
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        return body

    async def _deltas(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any] | TokenUsage, None]:
        """The ``delta`` of each streamed chunk of one request, then its ``TokenUsage``."""
        span, headers = tracing.llm_span(self.settings.served_name)
        streaming = False
        try:
            with self.workload.running("llm"):
                async with self._http.stream("POST", "/chat/completions", json=body, headers=headers) as r:
                    if r.status_code != 200:
                        raise _refusal(r.status_code, await r.aread())
                    streaming = True
                    async for line in r.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        data = line[5:].strip()
                        if data == "[DONE]":
                            break
                        try:
                            chunk = json.loads(data)
                        except ValueError as exc:  # (a line cut short by a dying server)
                            raise LlmError(
                                f"LLM at {self.url} sent a chunk that is not JSON: {data[:80]!r}"
                            ) from exc
                        if isinstance(usage := chunk.get("usage"), dict):
                            yield TokenUsage(
                                input_tokens=int(usage.get("prompt_tokens") or 0),
                                output_tokens=int(usage.get("completion_tokens") or 0),
                            )
                        choices = chunk.get("choices") or []
                        if choices:
                            yield choices[0].get("delta") or {}
        except httpx.HTTPError as exc:
            span.set_attribute("error.type", type(exc).__name__)
            raise _broken(self.url, exc, streaming=streaming) from exc
        finally:
            span.end()

    async def stream(
        self, start: TurnStart, user_text: str, *, stop_after: int = 0
    ) -> AsyncIterator[str | ToolCall | TokenUsage]:
        """Yield the visible answer text as it is generated (``<think>`` blocks removed), then its
        function calls, whole (a forced call's JSON is not text: only its call is yielded), then
        the tokens the server counted; ``stop_after``: see ``LlmClient.stream``."""
        body = self.request_body(start, user_text, counted=stop_after > 0)
        if tool_mode(start) == "forced":
            call, used = await self._forced_call(start, body)
            yield call
            if used is not None:
                yield used
            return
        think = ThinkFilter()
        calls = CallAssembler()
        usage = shown = None  # the server's count (each chunk's with ``stop_after``); that behind the text
        due = cut = False
        heard = start.heard_text  # until the first visible piece: ``spaced``
        async with contextlib.aclosing(self._deltas(body)) as deltas:
            async for message in deltas:
                if isinstance(message, TokenUsage):
                    usage = message
                    continue
                if tool_deltas := message.get("tool_calls"):
                    calls.feed(tool_deltas)
                if (delta := message.get("content")) and (visible := think.feed(delta)):
                    # Past ``stop_after``, a piece that starts a word is left to the next request,
                    # which continues this text from a word's end (``region.legs``, ``spaced``).
                    # Only a piece's start is a cut: one of several tokens with a space inside it
                    # is rare and kept whole.
                    if due and visible[0].isspace():
                        cut, usage = True, shown  # (its tokens are the next request's)
                        break
                    visible, heard, shown = spaced(heard, visible), "", usage
                    yield visible
                if stop_after and usage is not None and usage.output_tokens >= stop_after:
                    due = True
                    if shown is None:  # nothing visible yet (a <think> block): no word to end at
                        cut = True
                        break
        # (leaving ``aclosing`` on a cut aborts the request: vLLM stops decoding it)
        if not cut and (tail := think.flush()):
            yield spaced(heard, tail)
        for call in calls.calls():
            yield call
        if usage is not None:
            yield Cut(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens) if cut else usage

    async def _forced_call(
        self, start: TurnStart, body: dict[str, Any]
    ) -> tuple[ToolCall, TokenUsage | None]:
        """A forced call, asked for again once when the model did not close its JSON within
        ``max_output_tokens`` (a runaway string: ~5 % of SmolLM2's calls, measured): nothing of it
        has left the region, and a second sample almost always ends. Still cut: ``InvalidToolCall``."""
        used: TokenUsage | None = None  # every try's tokens: each was generated
        for attempt in range(FORCED_CALL_TRIES):
            async with contextlib.aclosing(self._deltas(body)) as deltas:
                pieces = [m async for m in deltas]
            for m in pieces:
                if isinstance(m, TokenUsage):
                    used = m if used is None else used + m
            text = "".join(m.get("content") or "" for m in pieces if not isinstance(m, TokenUsage))
            try:
                return forced_call(start, text), used
            except InvalidToolCall:
                if attempt + 1 == FORCED_CALL_TRIES:
                    raise
        raise AssertionError("unreachable")

    async def complete(self, start: TurnStart, user_text: str) -> str:
        """The whole answer's text at once (the warm-up)."""
        return "".join([d async for d in self.stream(start, user_text) if isinstance(d, str)])

    async def _models(self, timeout_s: float | None = None) -> list[object]:
        """The model names the server lists (``LlmError`` when it does not answer with them)."""
        timeout = httpx.Timeout(timeout_s) if timeout_s is not None else httpx.USE_CLIENT_DEFAULT
        try:
            resp = await self._http.get("/models", timeout=timeout)
            if resp.status_code != 200:
                raise LlmError(f"LLM at {self.url} answered {resp.status_code} for its model list")
            models = resp.json()
        except httpx.HTTPError as exc:
            raise _broken(self.url, exc, streaming=False) from exc
        except ValueError as exc:
            raise LlmError(f"LLM at {self.url} is not reachable: {exc!r}") from exc
        return [m.get("id") for m in models.get("data", [])]

    async def check(self) -> None:
        """Its model list, with a short timeout: no generation (``region.llm_watch``)."""
        await self._models(timeout_s=CHECK_TIMEOUT_S)

    async def load(self) -> None:
        """Check the server serves our model and warm its prompt path with a one-token answer."""
        names = await self._models()
        if self.settings.served_name not in names:
            raise LlmError(f"LLM at {self.url} serves {names}, not {self.settings.served_name}")
        warm = TurnStart(turn_id="warm-up", max_output_tokens=1, temperature=0.0)
        await self.complete(warm, "Hi")
        self.ready = True

    async def aclose(self) -> None:
        await self._http.aclose()
