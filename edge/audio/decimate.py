"""24 kHz -> 8 kHz for Silero, for a whole batch of streams in one numpy call.

A windowed-sinc low-pass (Kaiser) keeps what is below 3.6 kHz, computed only at the samples kept
(every third): ``TAPS`` multiply-adds per output. One ``einsum`` over a strided view does them for
every row of the batch, so numpy's per-call cost is paid once per batch, not once per stream (a
soxr stream per session cost ~30 us per 40 ms append with hundreds of sessions interleaved, each
one's state out of cache). Each row starts with its stream's last ``HISTORY`` input samples, so
the filter runs across chunk boundaries as a streaming resampler does.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from edge.shared.protocols import F32, RATE

FACTOR = 3
TAPS = 24
HISTORY = TAPS - 1
"""Input samples each row carries from its stream's previous chunk."""
CUTOFF_HZ = 3_600


def _lowpass() -> F32:
    n = np.arange(TAPS) - (TAPS - 1) / 2
    fc = CUTOFF_HZ / RATE  # (the input buffer's rate)
    h = 2 * fc * np.sinc(2 * fc * n) * np.kaiser(TAPS, 6.0)
    taps: F32 = (h / h.sum()).astype(np.float32)  # unity gain at DC
    return taps


_TAPS = _lowpass()


def decimate(rows: F32) -> F32:
    """``(B, HISTORY + FACTOR * n)`` contiguous float32 -> ``(B, n)``."""
    n = (rows.shape[1] - HISTORY) // FACTOR
    item = rows.itemsize
    windows = as_strided(
        rows, shape=(rows.shape[0], n, TAPS), strides=(rows.strides[0], FACTOR * item, item), writeable=False
    )
    out: F32 = np.einsum("bnk,k->bn", windows, _TAPS)
    return out
