"""The Realtime events of one assistant response: its ``response`` and ``item`` objects, the events
that open and close it, and the fields every audio/content event carries.

A response's message item (output 0) has one content part: ``audio`` (``output_audio`` in its item:
audio deltas and their transcript) or, for ``output_modalities: ["text"]``, ``text`` (``output_text``:
text deltas only). Its function calls follow as ``function_call`` items (outputs 1, 2, ...), each
sent whole at once: added, its arguments as one delta, done (``function_call``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from edge.responses.response_tools import call_item
from edge.responses.stages import METADATA_KEY, TurnStages
from edge.shared.events import Send, new_id, server_event
from edge.shared.limits import estimate_tokens
from wire.turn import TokenUsage

Status = Literal["completed", "cancelled", "failed"]


@dataclass
class ResponseFrames:
    send: Send
    user_item_id: str | None
    """The user item the response answers (``previous_item_id`` of its own item)."""
    voice: str
    id: str = field(default_factory=lambda: new_id("resp"))
    item_id: str = field(default_factory=lambda: new_id("item"))
    metadata: dict[str, str] = field(default_factory=dict)
    """``response.metadata``: who served it, degraded or failed over (see ``edge/__init__.py``)."""
    client_metadata: dict[str, str] = field(default_factory=dict)
    """The client's ``response.create`` metadata, echoed under the edge's own keys (LiveKit matches
    its replies by ``client_event_id`` in it)."""
    in_conversation: bool = True
    """``False`` for an out-of-band response: its item is not in the conversation."""
    output_format: dict[str, Any] = field(default_factory=lambda: {"type": "audio/pcm", "rate": 24000})
    """The session's ``audio.output.format``, as the response object shows it."""
    max_output_tokens: int | Literal["inf"] | None = None
    output_audio: bool = True
    """``False``: a text-only response (``response.output_text.*``, a ``text`` part)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """The response's ``function_call`` items, as sent (completed)."""
    stages: TurnStages = field(default_factory=TurnStages)
    """Where its time goes (``edge/responses/stages.py``): ``response.done``'s
    ``metadata.voicemesh_stages``."""

    async def content(self, type_: str, **fields: Any) -> None:
        """A ``response.output_audio*`` / ``output_text*`` / ``content_part.*`` event of its one part."""
        ids = {"response_id": self.id, "item_id": self.item_id, "output_index": 0, "content_index": 0}
        await self.send(server_event(type_, **ids, **fields))
        if self.stages.first_audio is None and type_ == "response.output_audio.delta":
            self.stages.audio_sent()

    async def vendor(self, type_: str, **fields: Any) -> None:
        """A ``voicemesh.*`` event about the response."""
        await self.send(server_event(type_, response_id=self.id, **fields))

    async def started(self) -> None:
        await self.send(server_event("response.created", response=self._response("in_progress", [])))
        item = self._item("in_progress", None)
        await self.send(
            server_event("response.output_item.added", response_id=self.id, output_index=0, item=item)
        )
        if self.in_conversation:
            await self.send(
                server_event("conversation.item.added", item=item, previous_item_id=self.user_item_id)
            )
        await self.content("response.content_part.added", part=self._part(""))

    async def text_delta(self, delta: str) -> None:
        """Some of the reply's text: the transcript of audio to come, or a text-only response's text."""
        kind = "response.output_audio_transcript.delta" if self.output_audio else "response.output_text.delta"
        await self.content(kind, delta=delta)

    async def function_call(
        self, item_id: str, call_id: str, name: str, arguments: str, previous_item_id: str | None
    ) -> None:
        """One whole function call: its item added, its arguments (one delta), its item done."""
        index = 1 + len(self.calls)
        ids = {"response_id": self.id, "output_index": index}
        started = call_item(item_id, call_id, name, "", "in_progress")
        await self.send(server_event("response.output_item.added", **ids, item=started))
        if self.in_conversation:
            await self.send(
                server_event("conversation.item.added", item=started, previous_item_id=previous_item_id)
            )
        fields = {**ids, "item_id": item_id, "call_id": call_id}
        await self.send(server_event("response.function_call_arguments.delta", **fields, delta=arguments))
        await self.send(
            server_event("response.function_call_arguments.done", **fields, name=name, arguments=arguments)
        )
        done = call_item(item_id, call_id, name, arguments, "completed")
        await self.send(server_event("response.output_item.done", **ids, item=done))
        if self.in_conversation:
            await self.send(
                server_event("conversation.item.done", item=done, previous_item_id=previous_item_id)
            )
        self.calls.append(done)

    async def finished(
        self,
        status: Status,
        transcript: str,
        cancel_reason: str | None = None,
        error: dict[str, str] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> None:
        """Close the response; ``error`` (``type``, ``code``, ``message``) says why a failed one failed,
        ``usage`` (``response_usage()``) what it cost."""
        item = self._item("completed" if status == "completed" else "incomplete", transcript)
        if self.output_audio:
            await self.content("response.output_audio.done")
            await self.content("response.output_audio_transcript.done", transcript=transcript)
        else:
            await self.content("response.output_text.done", text=transcript)
        await self.content("response.content_part.done", part=self._part(transcript))
        await self.send(
            server_event("response.output_item.done", response_id=self.id, output_index=0, item=item)
        )
        if self.in_conversation:
            await self.send(
                server_event("conversation.item.done", item=item, previous_item_id=self.user_item_id)
            )
        self.metadata[METADATA_KEY] = self.stages.finish()
        details: dict[str, Any] = {"type": status}
        if cancel_reason is not None:
            details["reason"] = cancel_reason
        if error is not None:
            details["error"] = error
        response = self._response(status, [item, *self.calls], details)
        if usage is not None:
            response["usage"] = usage
        await self.send(server_event("response.done", response=response))

    def _part(self, text: str) -> dict[str, str]:
        return {"type": "audio", "transcript": text} if self.output_audio else {"type": "text", "text": text}

    def _item(self, status: str, transcript: str | None) -> dict[str, Any]:
        content: list[dict[str, str]] = []
        if transcript is not None and self.output_audio:
            content = [{"type": "output_audio", "transcript": transcript}]
        elif transcript is not None:
            content = [{"type": "output_text", "text": transcript}]
        return {
            "id": self.item_id,
            "object": "realtime.item",
            "type": "message",
            "role": "assistant",
            "status": status,
            "content": content,
        }

    def _response(
        self, status: str, output: list[dict[str, Any]], details: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "realtime.response",
            "status": status,
            "status_details": details,
            "output": output,
            "conversation_id": "conv_default" if self.in_conversation else None,
            "max_output_tokens": self.max_output_tokens,
            "output_modalities": ["audio"] if self.output_audio else ["text"],
            "audio": {"output": {"format": self.output_format, "voice": self.voice or None}},
            "metadata": {**self.client_metadata, **self.metadata} or None,
        }


def response_usage(
    input_texts: Sequence[str], output_text: str, counted: TokenUsage | None = None
) -> dict[str, Any]:
    """``response.usage`` (``RealtimeResponseUsage``): the LLM's own count when the region that
    finished the turn gave one (``TurnDone.usage``), else estimated from text length.

    The estimate is ``edge.shared.limits.estimate_tokens`` of the text (one token per 3 UTF-8 bytes plus 4
    per message: an over-count): the input is the instructions, the history and the user's words (an
    audio turn's transcript), the output the reply's text. Audio is not counted as tokens of its own.
    After a failover the count is the finishing region's (its prompt holds what was heard); tokens
    of a region that died mid-answer are not counted."""
    if counted is not None:
        input_tokens, output_tokens = counted.input_tokens, counted.output_tokens
    else:
        input_tokens = sum(estimate_tokens(t) for t in input_texts if t)
        output_tokens = estimate_tokens(output_text) if output_text else 0
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_token_details": {
            "text_tokens": input_tokens,
            "audio_tokens": 0,
            "cached_tokens": 0,
            "image_tokens": 0,
        },
        "output_token_details": {"text_tokens": output_tokens, "audio_tokens": 0},
    }
