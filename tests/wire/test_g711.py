"""G.711 (mu-law, A-law) in ``wire.audio``: values of the ITU-T G.711 tables, silence and overload
codes, every code's round trip, and the quantisation error bound of the companding law."""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import pytest

from wire.audio import (
    ALAW_TO_PCM16,
    PCM16_TO_ALAW,
    PCM16_TO_ULAW,
    ULAW_TO_PCM16,
    G711Law,
    float_to_g711,
    g711_to_float,
)

ENCODE = {"ulaw": PCM16_TO_ULAW, "alaw": PCM16_TO_ALAW}
DECODE = {"ulaw": ULAW_TO_PCM16, "alaw": ALAW_TO_PCM16}
EVERY_PCM16 = np.arange(-32768, 32768, dtype=np.int32)


def _encode(law: G711Law, pcm: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    return ENCODE[law][np.asarray(pcm, dtype=np.int16).view(np.uint16)]


@pytest.mark.parametrize(
    ("law", "pcm", "code", "decoded"),
    [
        # mu-law: silence is 0xFF, overload is segment 7's top step (8031 in 14-bit units: 32124).
        ("ulaw", 0, 0xFF, 0),
        ("ulaw", 32767, 0x80, 32124),
        ("ulaw", -32768, 0x00, -32124),
        ("ulaw", 100, 0xF2, 104),
        ("ulaw", 1000, 0xCE, 988),
        ("ulaw", -1000, 0x4E, -988),
        ("ulaw", 10000, 0x9C, 9852),
        # A-law: silence is 0xD5 (+8) / 0x55 (-8), overload 4032 in 13-bit units: 32256.
        ("alaw", 0, 0xD5, 8),
        ("alaw", -1, 0x55, -8),
        ("alaw", 32767, 0xAA, 32256),
        ("alaw", -32768, 0x2A, -32256),
        ("alaw", 100, 0xD3, 104),
        ("alaw", 1000, 0xFA, 1008),
        ("alaw", -10000, 0x36, -9984),
    ],
)
def test_itu_table_values(law: G711Law, pcm: int, code: int, decoded: int) -> None:
    assert int(_encode(law, [pcm])[0]) == code
    assert int(DECODE[law][code]) == decoded


def test_ulaw_negative_zero_decodes_to_silence() -> None:
    assert int(ULAW_TO_PCM16[0x7F]) == 0 and int(ULAW_TO_PCM16[0xFF]) == 0


@pytest.mark.parametrize("law", ["ulaw", "alaw"])
def test_every_code_round_trips(law: G711Law) -> None:
    codes = np.arange(256, dtype=np.uint8)
    again = _encode(law, DECODE[law][codes])
    if law == "ulaw":  # negative zero (0x7F) comes back as the one silence code
        assert int(again[0x7F]) == 0xFF
        codes, again = np.delete(codes, 0x7F), np.delete(again, 0x7F)
    assert np.array_equal(again, codes)


@pytest.mark.parametrize(("law", "peak"), [("ulaw", 32124), ("alaw", 32256)])
def test_quantisation_error_is_what_the_law_allows(law: G711Law, peak: int) -> None:
    """Within range, each value comes back within half a step of its segment: at most ~3.5% of it
    (16 steps a segment, each segment twice the last) and a few units near zero."""
    pcm = EVERY_PCM16[np.abs(EVERY_PCM16) <= peak]
    err = np.abs(DECODE[law][_encode(law, pcm)].astype(np.int32) - pcm)
    assert err.max() <= 515
    small = np.abs(pcm) <= 1024
    assert err[small].max() <= 35
    assert (err[~small] / np.abs(pcm[~small])).max() < 0.036
    # And companding keeps order: a louder input never comes back quieter.
    assert np.all(np.diff(DECODE[law][_encode(law, EVERY_PCM16)].astype(np.int32)) >= 0)


@pytest.mark.parametrize("law", ["ulaw", "alaw"])
def test_float_round_trip_and_saturation(law: G711Law) -> None:
    t = np.arange(800, dtype=np.float32) / 8000
    tone = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    data = float_to_g711(tone, law)
    assert len(data) == 800  # one byte a sample
    assert np.abs(g711_to_float(data, law) - tone).max() < 0.5 * 0.036 + 1e-3
    loud = float_to_g711(np.array([1.5, -1.5, 1.0, -1.0], dtype=np.float32), law)
    assert loud[0] == loud[2] and loud[1] == loud[3]  # clipped, not wrapped around
    assert float_to_g711(np.zeros(3, dtype=np.float32), law) == bytes([0xFF if law == "ulaw" else 0xD5]) * 3


@pytest.mark.parametrize("law", ["ulaw", "alaw"])
def test_matches_the_reference_implementation_for_every_value(law: G711Law) -> None:
    """``audioop`` (the reference ``g711.c``, until Python 3.13) agrees on all 65536 inputs and 256 codes."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        audioop = pytest.importorskip("audioop")
    pcm = EVERY_PCM16.astype("<i2").tobytes()
    lin2, to_lin = (
        (audioop.lin2ulaw, audioop.ulaw2lin) if law == "ulaw" else (audioop.lin2alaw, audioop.alaw2lin)
    )
    assert np.array_equal(np.frombuffer(lin2(pcm, 2), dtype=np.uint8), _encode(law, EVERY_PCM16))
    assert np.array_equal(np.frombuffer(to_lin(bytes(range(256)), 2), dtype="<i2"), DECODE[law])
