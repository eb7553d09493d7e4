"""Audio files for the OpenAI audio API: speech encoded as it is synthesised, uploads decoded.

``SpeechEncoder`` turns the regions' 24 kHz PCM16 into the ``response_format`` a client asked for,
chunk by chunk, so the first bytes leave while later sentences are still being synthesised:

* ``pcm``: the samples as they are (24 kHz, 16-bit little-endian, mono: OpenAI's ``pcm``);
* ``wav``: a RIFF header with unknown sizes (``0xFFFFFFFF``, as OpenAI streams it), then PCM;
* ``mp3``, ``opus`` (in Ogg), ``flac``, ``aac`` (ADTS): PyAV's encoders writing to a stream that
  never seeks, drained after every chunk.

``decode_upload`` reads an uploaded file (wav, mp3, flac, ogg, webm, m4a: whatever FFmpeg demuxes)
into 16 kHz mono float for STT, refusing undecodable data and audio longer than a bound with a
``BadAudio`` that says why.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass

import av
import numpy as np

from wire.audio import REGION_OUT_RATE, STT_RATE, FloatAudio
from wire.errors import BadAudio


@dataclass(frozen=True, slots=True)
class SpeechFormat:
    name: str
    media_type: str
    container: str = ""
    """PyAV's output format; ``""``: written here (pcm, wav)."""
    codec: str = ""
    rate: int = REGION_OUT_RATE


SPEECH_FORMATS = {
    f.name: f
    for f in (
        SpeechFormat("pcm", "audio/pcm"),
        SpeechFormat("wav", "audio/wav"),
        SpeechFormat("mp3", "audio/mpeg", "mp3", "libmp3lame"),
        SpeechFormat("opus", "audio/ogg", "ogg", "libopus", 48_000),  # Opus runs at 48 kHz only
        SpeechFormat("flac", "audio/flac", "flac", "flac"),
        SpeechFormat("aac", "audio/aac", "adts", "aac"),
    )
}


class SpeechEncoder:
    """One response's audio: ``encode`` each PCM16 chunk as it comes, ``finish`` once at the end."""

    def encode(self, pcm: bytes) -> bytes:
        raise NotImplementedError

    def finish(self) -> bytes:
        return b""


class _Pcm(SpeechEncoder):
    def encode(self, pcm: bytes) -> bytes:
        return pcm


class _Wav(SpeechEncoder):
    def __init__(self) -> None:
        self._header_sent = False

    def encode(self, pcm: bytes) -> bytes:
        if self._header_sent:
            return pcm
        self._header_sent = True
        return wav_header(REGION_OUT_RATE) + pcm


def wav_header(rate: int, data_bytes: int = 0xFFFFFFFF) -> bytes:
    """A PCM16 mono RIFF header; the default sizes say "unknown" (a stream)."""
    riff = 0xFFFFFFFF if data_bytes == 0xFFFFFFFF else 36 + data_bytes
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16)
    return struct.pack("<4sI4s", b"RIFF", riff, b"WAVE") + fmt + struct.pack("<4sI", b"data", data_bytes)


class _Sink(io.RawIOBase):
    """Where PyAV writes: bytes collected until taken; not seekable, so muxers write straight on."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._buf += data
        return len(data)

    def take(self) -> bytes:
        out = bytes(self._buf)
        self._buf.clear()
        return out


class _Av(SpeechEncoder):
    def __init__(self, fmt: SpeechFormat) -> None:
        self._sink = _Sink()
        self._container = av.open(self._sink, "w", format=fmt.container)
        stream = self._container.add_stream(fmt.codec, rate=fmt.rate, layout="mono")
        assert isinstance(stream, av.AudioStream)
        self._stream = stream
        self._pts = 0

    def encode(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, dtype="<i2").reshape(1, -1)
        if not samples.size:
            return b""
        frame = av.AudioFrame.from_ndarray(samples, format="s16", layout="mono")
        frame.sample_rate = REGION_OUT_RATE  # PyAV resamples to the codec's rate when they differ
        frame.pts = self._pts
        self._pts += samples.shape[1]
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        return self._sink.take()

    def finish(self) -> bytes:
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._sink.take()


def speech_encoder(name: str) -> SpeechEncoder:
    """An encoder for ``response_format`` ``name`` (one of ``SPEECH_FORMATS``)."""
    fmt = SPEECH_FORMATS[name]
    if name == "pcm":
        return _Pcm()
    if name == "wav":
        return _Wav()
    return _Av(fmt)


def decode_upload(data: bytes, *, max_seconds: float) -> FloatAudio:
    """An uploaded audio file -> 16 kHz mono float32; ``BadAudio`` when FFmpeg cannot read it, it
    holds no audio, or it is longer than ``max_seconds``. Runs in a worker thread (CPU-bound)."""
    try:
        container = av.open(io.BytesIO(data), "r")
    except (av.error.FFmpegError, ValueError) as exc:
        raise BadAudio(f"could not decode the audio file: {exc}") from exc
    with container:
        if not container.streams.audio:
            raise BadAudio("the file has no audio stream")
        resampler = av.AudioResampler(format="flt", layout="mono", rate=STT_RATE)
        parts: list[FloatAudio] = []
        total = 0
        limit = int(max_seconds * STT_RATE)
        try:
            for frame in container.decode(audio=0):
                for out in resampler.resample(frame):
                    chunk = out.to_ndarray().reshape(-1).astype(np.float32)
                    parts.append(chunk)
                    total += len(chunk)
                if total > limit:
                    raise BadAudio(f"the audio is longer than {max_seconds:g} s, the limit of this endpoint")
            for out in resampler.resample(None):
                parts.append(out.to_ndarray().reshape(-1).astype(np.float32))
        except av.error.FFmpegError as exc:
            raise BadAudio(f"could not decode the audio file: {exc}") from exc
    audio = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    if not len(audio):
        raise BadAudio("the file holds no audio samples")
    return audio
