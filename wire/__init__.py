"""What voicemesh tiers share: the region turn protocol and its client, audio formats, the error
hierarchy, and a few primitives every tier needs (``rates``, ``text``, ``files``, ``tasks``).

This package imports no tier. Edges, routers and regions all speak through it.
"""

from wire.audio import (
    CLIENT_RATE,
    REGION_OUT_RATE,
    STT_RATE,
    Resampler,
    float_to_pcm16,
    pcm16_to_float,
    read_wav,
    resample,
    write_wav,
)
from wire.errors import (
    BadAudio,
    BadEvent,
    BreakerOpen,
    FirstByteTimeout,
    HistoryTooLong,
    ModelCorrupt,
    ModelError,
    ModelMissing,
    NoRegionAvailable,
    ProtocolError,
    RegionBusy,
    RegionDisconnected,
    RegionError,
    RegionUnavailable,
    ResidencyRefused,
    UnknownVoice,
    VoicemeshError,
)

__all__ = [
    "CLIENT_RATE",
    "REGION_OUT_RATE",
    "STT_RATE",
    "BadAudio",
    "BadEvent",
    "BreakerOpen",
    "FirstByteTimeout",
    "HistoryTooLong",
    "ModelCorrupt",
    "ModelError",
    "ModelMissing",
    "NoRegionAvailable",
    "ProtocolError",
    "RegionBusy",
    "RegionDisconnected",
    "RegionError",
    "RegionUnavailable",
    "Resampler",
    "ResidencyRefused",
    "UnknownVoice",
    "VoicemeshError",
    "float_to_pcm16",
    "pcm16_to_float",
    "read_wav",
    "resample",
    "write_wav",
]
