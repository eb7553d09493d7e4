"""A turn's work: user text (STT, or given) -> LLM stream -> clauses -> TTS, as a stream of events.

``StreamingPipeline`` overlaps the stages: the first clause goes to TTS as soon as the chunker
closes it, and its audio is sent while the LLM is still writing the rest. ``NaivePipeline`` runs
the same stages one after another (whole transcript, whole answer, whole synthesis); it exists so
``voicemesh bench region`` can show what the streaming buys.

A turn with empty typed text is answered without user words (``answers_unprompted``). A text-only
turn (``output_audio`` false) streams the LLM's text and never calls TTS; a ``transcribe_only`` turn
ends after its transcript (no LLM, no TTS), with timed segments; a ``speak_text`` turn reads its text
aloud (``read_aloud``: no STT, no LLM), skipping the clauses a failover says were heard. Function
calls the LLM makes are checked against the turn's tools (``region.tools.check_call``: a bad one
fails the turn with ``InvalidToolCall``) and sent as one ``tool_calls`` event after the audio of
every clause before them.

``Pipeline`` (here) holds what both share: hearing the user, speaking one clause, reading a text
aloud; ``StreamingPipeline`` is in ``region.streaming``. Pipelines are state-less: everything comes
from the ``Turn`` (built from ``turn.start``) and the ``Stages`` they are given (``region.turn_state``,
``region.protocols``). Cancelling the consuming task (or closing the
iterator) stops every stage: the LLM stream is closed (vLLM aborts the request), and the turn's
``CancelToken`` stops STT and TTS in their threads (Whisper at its next segment, a Kokoro clause
through its ONNX ``RunOptions``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator

from region.cancel import Cancelled, CancelToken
from region.playout import audio_s
from region.turn_state import PipelineEvent, Stages, Turn, answers_unprompted
from wire.audio import REGION_OUT_RATE, float_to_pcm16
from wire.client import ClauseAudio
from wire.text import split_clauses, unheard_clauses
from wire.turn import AudioClause, Segment, TextDelta, TokenUsage, ToolCall, Transcript


class Pipeline:
    def __init__(self, stages: Stages) -> None:
        self.stages = stages

    async def run(self, turn: Turn) -> AsyncGenerator[PipelineEvent, None]:
        """A turn: read aloud (speak-only), or heard and, when it is to be answered, answered."""
        if turn.start.speak_text is not None:
            async for event in self.read_aloud(turn):
                yield event
            return
        user_text, transcript = await self.hear(turn)
        if transcript is not None:
            yield transcript
        if not self.answers(turn, user_text):
            return
        async for event in self.answer(turn, user_text):
            yield event

    def answer(self, turn: Turn, user_text: str) -> AsyncGenerator[PipelineEvent, None]:
        """The answer to ``user_text``: how the stages run is each pipeline's own."""
        raise NotImplementedError

    async def user_text(self, turn: Turn) -> str:
        """What the user said: the router's transcript (failover), typed text, or STT of the audio."""
        start = turn.start
        if start.transcript is not None:
            return start.transcript
        if start.text is not None:
            return start.text
        assert turn.audio is not None, "validation lets no turn through without audio or text"
        t = time.perf_counter()
        async with self.stages.order.slot(urgent=True):  # every caller waits on it for a first word
            text = await self.stages.stt.transcribe(turn.audio, turn.cancel)
        turn.mark("stt_s", t)
        return text

    async def speak(
        self, turn: Turn, index: int, text: str, *, cancel: CancelToken | None = None
    ) -> ClauseAudio | None:
        t = time.perf_counter()
        batch = turn.start.priority == "batch"
        rate = self.stages.synth_rate
        expected = rate.expected_s(text)
        # A live turn's first clause is what its caller waits for; a later one must start before the
        # audio already sent has been played (``region.cpu_order``). Batch work counts as running
        # while it synthesises: it never takes Kokoro's wide session (background work keeps to one
        # core, leaving the other to the live callers and the edge).
        order = self.stages.order.slot(
            urgent=index == 0 and not batch,
            start_by=None if batch else turn.playout.start_by(expected),
            expected_s=expected,
        )
        async with order:
            ran = time.perf_counter()
            with self.stages.workload.running("batch") if batch else contextlib.nullcontext():
                audio = await self.stages.tts.synthesize(
                    text, turn.start.custom_voice or turn.start.voice, cancel or turn.cancel,
                    speed=turn.start.speed,
                )  # fmt: skip
            rate.update(len(text), time.perf_counter() - ran)
        if not len(audio):
            return None
        if index == 0:
            turn.mark("tts_first_audio_s", t)
        pcm = float_to_pcm16(audio)
        header = AudioClause(
            turn_id=turn.start.turn_id,
            index=index,
            text=text,
            sample_rate=REGION_OUT_RATE,
            audio_bytes=len(pcm),
        )
        return ClauseAudio(header, pcm)

    def transcript_event(self, turn: Turn, text: str, segments: list[Segment] | None = None) -> Transcript:
        turn.transcript = text
        return Transcript(turn_id=turn.start.turn_id, text=text, segments=segments or [])

    async def hear(self, turn: Turn) -> tuple[str, Transcript | None]:
        """The user's words and their ``transcript`` event (``None`` for a turn without user words)."""
        start = turn.start
        if answers_unprompted(start):
            return "", None
        if start.transcribe_only and start.transcript is None and turn.audio is not None:
            t = time.perf_counter()  # a transcription asked for as such: segments too
            async with self.stages.order.slot(urgent=True):
                segments = await self.stages.stt.transcribe_timed(
                    turn.audio, turn.cancel, language=start.language, prompt=start.prompt,
                    timestamps=start.timestamps,
                )  # fmt: skip
            turn.mark("stt_s", t)
            text = " ".join(s.text for s in segments)
            return text, self.transcript_event(turn, text, segments)
        text = await self.user_text(turn)
        event = self.transcript_event(turn, text)
        if start.end_of_turn and self.stages.end_of_turn is not None:  # only when asked: one prefill
            t = time.perf_counter()
            event.end_of_turn = await self.stages.end_of_turn.probability(start, text)
            turn.mark("end_of_turn_s", t)
        return text, event

    async def read_aloud(self, turn: Turn) -> AsyncGenerator[PipelineEvent, None]:
        """A ``speak_text`` turn: the text still to speak as one ``text.delta`` (so the router knows
        what is left unvoiced if this region dies), then each clause's audio in order. The clauses
        already in ``heard_text`` (delivered by a region before a failover) are skipped: the text is
        cut the same way everywhere (``split_clauses``), so they match clause for clause."""
        start = turn.start
        assert start.speak_text is not None
        clauses = unheard_clauses(split_clauses(start.speak_text), start.heard_text)
        turn.text = " ".join(clauses)
        if not clauses:
            return
        yield TextDelta(turn_id=start.turn_id, delta=turn.text)
        index = 0
        for clause in clauses:
            spoken = await (
                self.speak(turn, index, clause)
                if turn.gives_way is None
                else self._speak_in_gaps(turn, index, clause)
            )
            if spoken:
                turn.mark("first_audio_s")
                index += 1
                turn.playout.sent(audio_s(spoken))
                yield spoken

    async def _speak_in_gaps(self, turn: Turn, index: int, clause: str) -> ClauseAudio | None:
        """A batch turn's clause, synthesised while no live turn runs or waits; one arriving stops
        the synthesis (its own cancel token), and the clause is said again, whole, afterwards."""
        gate = turn.gives_way
        assert gate is not None
        while True:
            await gate.idle()
            token = CancelToken()
            try:
                with gate.preempting(token):
                    return await self.speak(turn, index, clause, cancel=token)
            except Cancelled:
                if not token.cancelled:
                    raise  # not a live turn's doing: the session ends the turn as cancelled
                continue  # a live turn came: wait it out
            except BaseException:
                # The turn itself was cancelled: stop the thread's synthesis too, and wait for it as
                # the session waits for ``turn.cancel``'s (it does not know this token).
                token.cancel()
                await token.settled()
                raise

    @staticmethod
    def answers(turn: Turn, user_text: str) -> bool:
        """Whether the turn goes on past its transcript: not when it only transcribes, nor when
        nothing was said (silence gets no answer)."""
        if turn.start.transcribe_only:
            return False
        return answers_unprompted(turn.start) or bool(user_text.strip())


class NaivePipeline(Pipeline):
    """Each stage waits for the previous one to finish; first audio = all the work."""

    async def answer(self, turn: Turn, user_text: str) -> AsyncGenerator[PipelineEvent, None]:
        t = time.perf_counter()
        async for delta in self.stages.llm.stream(turn.start, user_text):
            if isinstance(delta, TokenUsage):
                turn.usage = delta
            elif isinstance(delta, ToolCall):
                turn.call(delta)
            else:
                turn.text += delta
        turn.mark("llm_s", t)
        yield TextDelta(turn_id=turn.start.turn_id, delta=turn.text)
        speaks = turn.start.output_audio and turn.text.strip()
        if speaks and (audio := await self.speak(turn, 0, turn.text)):
            turn.mark("first_audio_s")
            yield audio
        if calls := turn.calls_event():
            yield calls
