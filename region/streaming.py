"""``StreamingPipeline``: the stages of a turn overlapped (``region.pipeline`` has the shared parts).

The LLM's text is cut into clauses as it streams (the writer task); each clause goes to TTS as soon
as the chunker closes it (the speaker task), and its audio is sent while the LLM is still writing
the rest. A turn decoded in legs (``region.legs``) holds its first clause for the end of the short
first leg, then holds decoding while that clause is synthesised. Where the next clause is expected
to take longer to synthesise than the first clause's audio plays, the first audio is held (at most
``Stages.first_audio_hold_s``) so the caller hears the two without a gap (``region.playout``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

from region.legs import holds, in_legs
from region.pipeline import Pipeline
from region.playout import audio_s
from region.turn_state import PipelineEvent, Turn
from wire.client import ClauseAudio
from wire.tasks import cancel_and_wait
from wire.turn import TextDelta, TokenUsage, ToolCall, ToolCalls


class _End:
    """Marks the end of the streaming pipeline's output queue."""


@dataclass
class _FirstClauseHold:
    """A turn decoded in legs (``region.legs``): its first clause waits for the end of the short
    first leg, then is synthesised with decoding held, so nothing else runs beside it."""

    first_leg_over: asyncio.Event = field(default_factory=asyncio.Event)
    first_spoken: asyncio.Event = field(default_factory=asyncio.Event)


class StreamingPipeline(Pipeline):
    async def answer(self, turn: Turn, user_text: str) -> AsyncGenerator[PipelineEvent, None]:
        out: asyncio.Queue[PipelineEvent | BaseException | _End] = asyncio.Queue()
        clauses: asyncio.Queue[str | ToolCalls | None] = asyncio.Queue()
        hold = _FirstClauseHold()
        if not holds(turn.start, self.stages.first_leg_tokens):
            hold.first_leg_over.set()
        writer = asyncio.create_task(self._write(turn, user_text, out, clauses, hold), name="llm")
        speaker = asyncio.create_task(self._speak_all(turn, out, clauses, hold), name="tts")
        try:
            while not isinstance(item := await out.get(), _End):
                if isinstance(item, BaseException):
                    raise item
                if isinstance(item, ClauseAudio):
                    turn.mark("first_audio_s")
                yield item
        finally:
            turn.cancel.cancel()  # stop the TTS thread now, not when its clause would have ended
            await cancel_and_wait(writer, speaker)

    async def _write(
        self, turn: Turn, user_text: str, out: asyncio.Queue[PipelineEvent | BaseException | _End],
        clauses: asyncio.Queue[str | ToolCalls | None], hold: _FirstClauseHold,
    ) -> None:  # fmt: skip
        chunker = self.stages.chunker()
        speaks = turn.start.output_audio  # a text-only turn sends no clause to TTS
        t = time.perf_counter()

        async def first_clause_spoken() -> None:
            hold.first_leg_over.set()
            if "first_clause_s" in turn.timings:  # else no clause waits for TTS: nothing to hold for
                held = time.perf_counter()
                await hold.first_spoken.wait()
                turn.mark("llm_held_s", held)

        cap = self.stages.first_leg_tokens
        answer = (
            in_legs(self.stages.llm, turn.start, user_text, cap, first_clause_spoken)
            if holds(turn.start, cap)
            else self.stages.llm.stream(turn.start, user_text)
        )
        try:
            async for delta in answer:
                if isinstance(delta, TokenUsage):
                    turn.usage = delta
                    continue
                turn.mark("llm_ttft_s", t)
                if isinstance(delta, ToolCall):
                    turn.call(delta)
                    continue
                turn.text += delta
                out.put_nowait(TextDelta(turn_id=turn.start.turn_id, delta=delta))
                for clause in chunker.feed(delta) if speaks else ():
                    turn.mark("first_clause_s")
                    clauses.put_nowait(clause)
            if speaks and (last := chunker.flush()):
                turn.mark("first_clause_s")
                clauses.put_nowait(last)
            if calls := turn.calls_event():  # behind the clauses: sent after their audio
                clauses.put_nowait(calls)
            turn.mark("llm_s", t)
        except Exception as exc:
            out.put_nowait(exc)
        finally:
            hold.first_leg_over.set()
            clauses.put_nowait(None)

    async def _speak_all(
        self,
        turn: Turn,
        out: asyncio.Queue[PipelineEvent | BaseException | _End],
        clauses: asyncio.Queue[str | ToolCalls | None],
        hold: _FirstClauseHold,
    ) -> None:
        index = 0
        held: list[ClauseAudio] = []  # the first audio, while it waits for the rest to keep up
        timer: asyncio.TimerHandle | None = None

        def send() -> None:
            if timer is not None:
                timer.cancel()
            for spoken in held:
                turn.playout.sent(audio_s(spoken))
                out.put_nowait(spoken)
            held.clear()

        try:
            while (clause := await clauses.get()) is not None:
                if isinstance(clause, ToolCalls):
                    send()
                    out.put_nowait(clause)
                    continue
                await hold.first_leg_over.wait()  # the few tokens left: then the clause is alone
                if spoken := await self.speak(turn, index, clause):
                    held.append(spoken)
                    wait_s = 0.0 if index else turn.playout.first_hold_s(
                        spoken, self.stages.synth_rate, self.stages.first_audio_hold_s
                    )  # fmt: skip
                    if wait_s > 0:  # sent when the next clause is ready, or after wait_s at most
                        timer = asyncio.get_running_loop().call_later(wait_s, send)
                    else:
                        send()
                    index += 1
                hold.first_spoken.set()
            send()
            out.put_nowait(_End())
        except Exception as exc:
            out.put_nowait(exc)
        finally:
            if timer is not None:
                timer.cancel()
            hold.first_spoken.set()  # a writer holding for the first clause never waits on a dead speaker
