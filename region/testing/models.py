"""In-memory stand-ins for the region's models, for tests of what the region does *around* them
(the protocol, admission, clause order, cancelling): ``FixedTranscript`` (STT), ``ScriptedLlm``,
``ToneTts`` and ``ThreadedTts`` (TTS), and ``Hold`` to keep one busy until the test lets it go.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence

import numpy as np

from region.cancel import Cancelled, CancelToken
from region.protocols import Cut, LlmUnreachable, choose_voice
from region.voice_styles import check_custom
from wire.audio import REGION_OUT_RATE, STT_RATE, FloatAudio
from wire.turn import Segment, TokenUsage, ToolCall, TurnStart
from wire.voices import CustomVoice


class Hold:
    """A point where a stand-in stage waits until the test lets it go, so a test can act while a
    stage is busy without timing anything: ``await hold.reached.wait()``, act, ``hold.release()``."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self._released = asyncio.Event()

    POLL_S = 0.005
    """How often a wait with a ``CancelToken`` looks at it (a thread-safe flag, as onnxruntime's)."""

    def release(self) -> None:
        self._released.set()

    async def wait(self, cancel: CancelToken | None = None) -> None:
        """Until released; with ``cancel``, raises ``Cancelled`` soon after it is set, as a model
        stopped mid-run does (onnxruntime polls its terminate flag between graph nodes)."""
        self.reached.set()
        if cancel is None:
            await self._released.wait()
            return
        while not self._released.is_set():
            cancel.raise_if_cancelled()
            await asyncio.sleep(self.POLL_S)


class FixedTranscript:
    """Stands in for Whisper where speech recognition is not under test: hears ``text`` in any audio.
    With a ``hold`` it stays busy (as on a long recording) until released or cancelled."""

    ready = True

    def __init__(self, text: str = "What is the weather like today?", *, hold: Hold | None = None) -> None:
        self.text = text
        self.hold = hold
        self.calls = 0
        self.running = 0
        self.asked: list[tuple[str, str, bool]] = []
        """Each timed transcription's ``(language, prompt, timestamps)``."""

    async def load(self) -> None:
        pass

    async def transcribe(self, audio: FloatAudio, cancel: CancelToken) -> str:
        self.calls += 1
        self.running += 1
        try:
            if self.hold is not None:
                await self.hold.wait()
            cancel.raise_if_cancelled()
            return self.text
        finally:
            self.running -= 1

    async def transcribe_timed(
        self, audio: FloatAudio, cancel: CancelToken, *, language: str = "", prompt: str = "",
        timestamps: bool = True,
    ) -> list[Segment]:  # fmt: skip
        self.asked.append((language, prompt, timestamps))
        text = await self.transcribe(audio, cancel)
        return [Segment(start=0.0, end=round(len(audio) / STT_RATE, 3), text=text)]


TOKEN = re.compile(r"\s*(?:'\w+|\w+|[^\w\s])|\s+")
"""``ScriptedLlm``'s tokens, as a BPE tokenizer cuts text: a word (with the space before it), a
punctuation mark, or a contraction's end ("'s")."""


class ScriptedLlm:
    """Stands in for vLLM where the model's words are not under test: streams ``reply`` a token
    (``TOKEN``) per delta. After a failover (``heard_text``) it continues after what was heard when
    ``reply`` starts with it, as ``VllmClient`` does (vLLM's ``continue_final_message``). With a
    ``hold`` the stream pauses before delta ``hold_at``, like a model still writing. ``calls`` end
    the answer (when the turn has tools and its ``tool_choice`` is not ``"none"``), as vLLM's calls
    do. With ``counts_tokens`` it counts the tokens (``TokenUsage``), and ``stop_after`` cuts the
    answer as ``VllmClient`` does: before the first word to start after that many."""

    ready = True
    url = "memory://scripted-llm"

    def __init__(
        self,
        reply: str = "Sunny and warm, with a light breeze. Take a hat if you go out.",
        *,
        hold: Hold | None = None,
        hold_at: int = 0,
        calls: Sequence[ToolCall] = (),
        counts_tokens: bool = False,
    ) -> None:
        self.reply = reply
        self.counts_tokens = counts_tokens
        self.calls = list(calls)
        self.hold = hold
        self.hold_at = hold_at
        self.requests: list[tuple[TurnStart, str]] = []
        """``(turn.start, user_text)`` of every stream asked for."""
        self.open_streams = 0
        self.stopped_after: list[int] = []
        """Each stream's ``stop_after``, as it ended."""
        self.aborted = 0
        """Streams closed before their reply was all sent (the real client aborts the request)."""
        self.reachable = True
        """``False``: ``check`` fails as a dead server's would (``region.llm_watch``)."""

    async def load(self) -> None:
        pass

    async def check(self) -> None:
        if not self.reachable:
            raise LlmUnreachable(f"LLM at {self.url} is unreachable (set by the test)")

    async def stream(
        self, start: TurnStart, user_text: str, *, stop_after: int = 0
    ) -> AsyncIterator[str | ToolCall | TokenUsage]:
        self.requests.append((start, user_text))
        reply = self.reply
        if start.heard_text and reply.startswith(start.heard_text):
            reply = reply[len(start.heard_text) :]
        tokens = TOKEN.findall(reply)
        if self.counts_tokens:
            tokens = tokens[: start.max_output_tokens]
        sent = len(tokens)
        if self.counts_tokens and stop_after:  # (the real client cuts on the server's count)
            sent = next((i for i in range(stop_after, sent) if tokens[i][0].isspace()), sent)
        self.open_streams += 1
        finished = False
        try:
            for i, token in enumerate(tokens[:sent]):
                if self.hold is not None and i == self.hold_at:
                    await self.hold.wait()
                await asyncio.sleep(0)  # other tasks run between tokens, as with a network stream
                yield token
            if start.tools and start.tool_choice != "none":
                for call in self.calls:
                    yield call
            if self.counts_tokens:
                prompt = len(user_text.split()) + len(start.heard_text.split())
                kind = Cut if sent < len(tokens) else TokenUsage
                yield kind(input_tokens=prompt, output_tokens=sent)
            finished = True
        finally:
            self.open_streams -= 1
            self.stopped_after.append(stop_after)
            self.aborted += not finished

    async def aclose(self) -> None:
        pass


class ToneTts:
    """Stands in for Kokoro where the voice is not under test: a 50 ms tone per clause. With a
    ``hold`` every clause waits for it first (a clause that takes a while): cancelling the clause's
    ``CancelToken`` ends that wait with ``Cancelled``, as it stops Kokoro's ONNX run mid-clause."""

    ready = True
    TONE_S = 0.05

    def __init__(
        self,
        voices: Sequence[str] = ("tone", "hum"),
        default_voice: str = "tone",
        *,
        hold: Hold | None = None,
    ) -> None:
        self.voices = frozenset(voices)
        self.default_voice = default_voice
        self.hold = hold
        self.spoken: list[str] = []
        self.spoken_with: list[str | CustomVoice] = []
        """The voice of each clause: a name, or a turn's custom voice definition."""
        self.asked: list[str] = []
        """Every clause asked for, in order, also the ones cancelled mid-synthesis (not in ``spoken``)."""
        self.running = 0

    async def load(self) -> None:
        pass

    def resolve_voice(self, voice: str | CustomVoice) -> str:
        if isinstance(voice, CustomVoice):
            check_custom(voice, self.voices)
            return voice.id
        return choose_voice(voice, self.default_voice, self.voices)

    async def synthesize(
        self, text: str, voice: str | CustomVoice, cancel: CancelToken, *, speed: float = 1.0
    ) -> FloatAudio:
        self.resolve_voice(voice)
        self.spoken_with.append(voice)
        self.asked.append(text)
        self.running += 1
        try:
            await self.take_a_while(cancel)
            cancel.raise_if_cancelled()
        finally:
            self.running -= 1
        self.spoken.append(text)
        t = np.arange(int(REGION_OUT_RATE * self.TONE_S)) / REGION_OUT_RATE
        return (0.2 * np.sin(2 * np.pi * 440.0 * t)).astype(np.float32)

    async def take_a_while(self, cancel: CancelToken) -> None:
        """The clause's synthesis time: the ``hold``, if any."""
        if self.hold is not None:
            await self.hold.wait(cancel)


class ThreadedTts(ToneTts):
    """A ``ToneTts`` whose clauses are synthesised in a worker thread, as Kokoro's are: each waits
    there until ``go`` is set, and a cancel reaches it only through the token's ONNX ``RunOptions``
    (checked every ``POLL_S``, as onnxruntime checks its terminate flag between graph nodes). For
    tests of what must not outlive a turn: ``in_thread`` counts the syntheses still in a thread.
    Set ``go`` (or cancel the clause) before the test ends: a waiting thread holds up the loop's close."""

    POLL_S = 0.005

    def __init__(self, voices: Sequence[str] = ("tone", "hum"), default_voice: str = "tone") -> None:
        super().__init__(voices, default_voice)
        self.go = threading.Event()
        self.entered = asyncio.Event()
        """Set once a clause is in its thread."""
        self.in_thread = 0
        self._lock = threading.Lock()

    async def take_a_while(self, cancel: CancelToken) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.to_thread(self._run, cancel, lambda: loop.call_soon_threadsafe(self.entered.set))

    def _run(self, cancel: CancelToken, entered: Callable[[], object]) -> None:
        with cancel.onnx_run() as options:
            with self._lock:
                self.in_thread += 1
            entered()
            try:
                while not self.go.wait(self.POLL_S):
                    if options.terminate:
                        raise Cancelled
            finally:
                # Still inside onnx_run: once the token has no run in flight, this count is down.
                with self._lock:
                    self.in_thread -= 1
