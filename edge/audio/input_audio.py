"""One session's input audio buffer: the client's format in (24 kHz PCM16, or 8 kHz G.711), 32 ms
chunks to VAD as they fill, turns out (``TurnAudio``: 16 kHz PCM16 for the region's STT, when asked).

The buffer holds 24 kHz float, so PCM (what nearly every client sends) goes in with no resampling
at all; a turn is resampled to 16 kHz once, whole, if something takes it on (per append, a
streaming resampler per session was a sixth of the edge's CPU: docs/benchmarks.md, "Append hot
path").
Sample positions are absolute (24 kHz samples since the session began), so ``audio_start_ms`` /
``audio_end_ms`` mean what OpenAI's do. With server VAD, audio before the current speech is trimmed
to the prefix padding as it goes, so an open microphone never grows the buffer.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import numpy as np

from edge.audio.audio_formats import FORMATS, PCM, AudioFormat, InputDecoder
from edge.audio.turn_audio import MS, TurnAudio
from edge.audio.turn_detector import SpeechPaused, TurnDetector, TurnEvent
from edge.shared.protocols import CHUNK, F32, RATE, SpeechProbability
from wire.errors import BadAudio

_PCM16_SCALE = np.float32(1 / 32768)


class _Samples:
    """Float samples appended at the end and dropped from the front, in one array with room to
    spare: an append copies only itself (a concatenation copied the whole buffer, seconds of
    speech, on every 40 ms append). ``view`` is valid until the next ``extend``: nothing that
    outlives a call may keep it (take copies out)."""

    def __init__(self) -> None:
        self._data = np.zeros(0, dtype=np.float32)  # (an idle session holds no audio)
        self._lo = 0
        self._hi = 0

    def __len__(self) -> int:
        return self._hi - self._lo

    @property
    def view(self) -> F32:
        return self._data[self._lo : self._hi]

    def span(self, i: int, n: int) -> F32:
        """``view[i : i + n]`` in one slice (the VAD reads a chunk this way, 31 times a second a stream)."""
        i += self._lo
        return self._data[i : i + n]

    def extend(self, samples: F32) -> None:
        n = len(samples)
        at = self._room(n)
        self._data[at : at + n] = samples

    def extend_pcm16(self, pcm: bytes) -> None:
        """Little-endian PCM16, decoded straight into the buffer: one numpy call, no array between
        (what ``pcm16_to_float`` and ``extend`` give, the same floats: the scale is a power of 2)."""
        samples = np.frombuffer(pcm, dtype="<i2")
        at = self._room(len(samples))
        np.multiply(samples, _PCM16_SCALE, out=self._data[at : at + len(samples)])

    def _room(self, n: int) -> int:
        """Make room for ``n`` more samples; where they go. They count from here on."""
        if self._hi + n > len(self._data):
            live = self._hi - self._lo
            size = 2 * (live + n)
            if not size <= len(self._data) <= 4 * size:  # outgrown, or long speech since trimmed
                data = np.empty(size, dtype=np.float32)
                data[:live] = self._data[self._lo : self._hi]
                self._data = data
            else:  # room enough once what was dropped is reclaimed (numpy copies overlaps safely)
                self._data[:live] = self._data[self._lo : self._hi]
            self._lo, self._hi = 0, live
        at = self._hi
        self._hi += n
        return at

    def drop(self, n: int) -> None:
        """Drop the first ``n`` samples."""
        self._lo = min(self._hi, self._lo + n)


MAX_LAG_S = 3.0
"""How far the VAD may be behind the audio before the session stops taking more (``behind``): well
above what a saturated edge lags at real time (~1 s), well below the buffer's 30 s."""


class InputAudio:
    def __init__(
        self,
        vad: SpeechProbability,
        detector: TurnDetector | None,
        *,
        max_buffer_s: float,
        audio_format: AudioFormat = FORMATS[PCM],
    ) -> None:
        self._vad = vad
        self.detector = detector
        self._decoder = InputDecoder(audio_format, RATE)
        self._buf = _Samples()
        self._buf_start = 0
        """Absolute sample index of ``_buf[0]``."""
        self._vad_pos = 0
        """Absolute index of the next sample VAD has not seen."""
        self._max_samples = int(max_buffer_s * RATE)
        self._max_lag = int(min(MAX_LAG_S, max_buffer_s / 2) * RATE)
        self._peeked: TurnAudio | None = None
        """The last ``peek``."""
        self._in_vad = False
        """A chunk is with the VAD (one at a time: its state is sequential)."""
        self._waiters: list[asyncio.Future[None]] = []
        self.events: deque[TurnEvent] = deque()
        """What the VAD's answers started or stopped, until the session has handled each (the
        buffer is not trimmed meanwhile: a stopped turn's speech is taken first)."""
        self.on_events: Callable[[], None] = lambda: None
        """Called when ``events`` gets one, or the VAD fails (``vad_error``)."""
        self.on_heard: Callable[[int], None] | None = None
        """While set, called after each chunk the VAD heard during speech with where it has heard up
        to (ms): a bound on speech held over an answer (``edge/realtime/backchannel.py``)."""
        self.vad_error: Exception | None = None
        self.closed = False
        """The session ended: answers still coming from the VAD are dropped."""
        self.hold_pauses = False
        """Stop at each pause the detector reports (``held``) until ``release`` (``semantic_vad``:
        ``edge/realtime/semantic_turns.py``)."""
        self.held = False

    @property
    def behind(self) -> bool:
        """The VAD has more than ``MAX_LAG_S`` of the audio still to hear (a client sending faster
        than real time, a saturated edge): the session takes no more until it has caught up
        (``caught_up``), so the client waits as it would for any slow reader, and no audio is
        dropped unheard (past ``max_buffer_s`` only the tail is kept)."""
        return self.detector is not None and self._buf_start + len(self._buf) - self._vad_pos > self._max_lag

    @property
    def buffered_ms(self) -> int:
        """All the audio appended and not taken, with what the resampler still holds."""
        return (len(self._buf) + self._decoder.pending) // MS

    @property
    def audio_format(self) -> AudioFormat:
        return self._decoder.format

    @audio_format.setter
    def audio_format(self, fmt: AudioFormat) -> None:
        """The client's format changed: what the old one left in the resampler stays buffered."""
        if fmt != self._decoder.format:
            self._flush_decoder(fmt)

    def _flush_decoder(self, fmt: AudioFormat) -> None:
        """Buffer what the resampler holds; go on in ``fmt`` with a new one."""
        self._buf.extend(self._decoder.flush())
        self._decoder = InputDecoder(fmt, RATE)

    def append(self, data: bytes) -> None:
        """Client audio in the session's input format: buffered now, its chunks pushed to the VAD
        one after another; what they start or stop comes in ``events`` (and ``on_events``)."""
        samples = self._decoder.samples(data)  # (checks the length first: bad audio is refused as such)
        if self.detector is None and len(self._buf) + self._decoder.pending + samples > self._max_samples:
            raise BadAudio(
                f"input audio buffer is full ({self._max_samples // RATE} s): commit or clear it",
                code="input_audio_buffer_full",
            )
        if self._decoder.as_is:  # PCM16 at the buffer's rate (nearly every client)
            self._buf.extend_pcm16(data)
        else:
            self._buf.extend(self._decoder.decode(data))
        self._pump()

    def _pump(self) -> None:
        if (
            not self._in_vad
            and not self.held
            and not self.closed
            and self.detector is not None
            and self._vad_pos + CHUNK <= self._buf_start + len(self._buf)
        ):
            self._in_vad = True
            self._vad.push(self)

    def next_chunk(self) -> F32:
        return self._buf.span(self._vad_pos - self._buf_start, CHUNK)

    def heard(self, probability: float) -> None:
        self._in_vad = False
        if self.closed or self.detector is None:  # (turn detection turned off meanwhile: dropped)
            self._caught_up()
            return
        ev = self.detector.feed(probability, self._vad_pos // MS)
        self._vad_pos += CHUNK
        if ev is not None:
            self.held = self.hold_pauses and isinstance(ev, SpeechPaused)
            self.events.append(ev)
            self.on_events()
        elif self.on_heard is not None and self.detector.voiced:
            # Voiced chunks only: the silence window after a short "mm-hm" (500 ms by default) is
            # not speech going on, and counting it made every backchannel reach the bound.
            self.on_heard(self._vad_pos // MS)
        if not self.detector.speaking and not self.events:  # (a stopped turn's speech is taken first)
            self._trim(self._vad_pos - self.detector.config.prefix_padding_ms * MS)
        elif len(self._buf) > self._max_samples:
            self._trim(self._buf_start + len(self._buf) - self._max_samples)  # endless speech: keep the tail
        self._pump()
        if not self._in_vad:
            self._caught_up()

    def release(self, *, end_turn: bool) -> bool:
        """The VAD goes on from the pause it was held at; ``end_turn``: the turn ends at that pause
        (its ``SpeechStopped`` comes in ``events``). Whether it did."""
        self.held = False
        stopped = self.detector.end_pause() if end_turn and self.detector is not None else None
        if stopped is not None:
            self.events.append(stopped)
            self.on_events()
        self._pump()
        if not self._in_vad:
            self._caught_up()
        return stopped is not None

    def failed(self, exc: Exception) -> None:
        self._in_vad = False
        self.vad_error = exc
        self.on_events()
        self._caught_up()

    async def caught_up(self) -> None:
        """Once the VAD has heard every whole chunk appended so far."""
        while self._in_vad:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def _caught_up(self) -> None:
        if not self._waiters:
            return
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _trim(self, keep_from: int) -> None:
        drop = keep_from - self._buf_start
        if drop > 0:
            self._buf.drop(drop)
            self._buf_start = keep_from
            if not self._in_vad:  # (audio taken whole, VAD not there yet: it goes on from here)
                self._vad_pos = max(self._vad_pos, keep_from)

    def take(self, start_ms: int | None = None, end_ms: int | None = None) -> TurnAudio:
        """The audio from ``start_ms`` (default: buffer start) to ``end_ms`` (default: all, with
        what the resampler holds), and drop the buffer up to the end of what was taken."""
        if end_ms is None:
            self._flush_decoder(self._decoder.format)
        start, end = self._span(start_ms, end_ms)
        audio = self._turn_audio(start, end)
        self._trim(self._buf_start + end)
        self._peeked = None  # (taken: no reason to hold a turn's audio twice)
        return audio

    def peek(self, start_ms: int, end_ms: int) -> TurnAudio:
        """What ``take(start_ms, end_ms)`` would return now, leaving the buffer as it is."""
        start, end = self._span(start_ms, end_ms)
        self._peeked = self._turn_audio(start, end)
        return self._peeked

    def so_far(self, start_ms: int) -> TurnAudio:
        """The audio from ``start_ms`` to where the VAD has heard (a turn model's question)."""
        start, end = self._span(start_ms, self._vad_pos // MS)
        a = self._buf_start + start
        return TurnAudio(a, self._buf_start + end, self._buf.view[start:end].copy())

    def _turn_audio(self, start: int, end: int) -> TurnAudio:
        """Buffer indices ``start:end``: what was peeked last if it is the same span (a turn started
        at a pause is then taken whole, resampled once: ``edge/realtime/speculation.py``), carried on from it
        if the span only grew (``TurnAudio.pcm16k``)."""
        a, b = self._buf_start + start, self._buf_start + end
        peeked = self._peeked
        if peeked is not None and peeked.start == a and peeked.end == b:
            return peeked  # (what a position holds never changes: positions only grow)
        grown = peeked if peeked is not None and peeked.end <= b else None
        return TurnAudio(a, b, self._buf.view[start:end].copy(), grown_from=grown)

    def _span(self, start_ms: int | None, end_ms: int | None) -> tuple[int, int]:
        start = max(0, (start_ms or 0) * MS - self._buf_start)
        end = len(self._buf) if end_ms is None else max(start, end_ms * MS - self._buf_start)
        return start, min(end, len(self._buf))

    def clear(self) -> None:
        self._flush_decoder(self._decoder.format)  # (dropped too, but counted: positions stay true)
        self._trim(self._buf_start + len(self._buf))
        self._peeked = None
        self._vad_pos = max(self._vad_pos, self._buf_start)
