"""Prometheus metrics of the edge, on the default registry beside the router's (``router.metrics``,
imported here so ``/metrics`` always lists them); ``render()`` is what ``GET /metrics`` serves."""

from __future__ import annotations

import re
from hashlib import sha256

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

import router.metrics  # noqa: F401  (registers the router's metrics)

SESSIONS_OPEN = Gauge("voicemesh_edge_sessions_open", "Realtime sessions open on this edge")
CLIENT_EVENTS = Counter(
    "voicemesh_edge_client_events_total",
    "Client events handled, by type (`unparsed` if unreadable) and outcome (`ok` or the error code)",
    ["type", "outcome"],
)
DIRECT_FRAMES = Counter(
    "voicemesh_edge_direct_frames_total",
    "Client frames (audio appends) taken in the transport's callback, past the ASGI queue"
    " (the app's direct_ws.py); also counted in voicemesh_edge_client_events_total; added up to 50 at a time",
)
SESSIONS_REFUSED = Counter(
    "voicemesh_edge_sessions_refused_total",
    "Realtime sessions refused at the handshake, by the refusal's code and HTTP status (4xx the"
    " caller's: credentials, limits; 5xx the edge's: draining, no region, a store outage)",
    ["code", "status"],
)
RESPONSES = Counter(
    "voicemesh_edge_responses_total",
    "Responses finished, by status and who served them",
    ["status", "served_by"],
)
SPECULATIVE_TURNS = Counter(
    "voicemesh_edge_speculative_turns_total",
    "Turns started at a pause in the speech (edge/realtime/speculation.py): `adopted` when the turn end"
    " was called on them, `dropped` when speech came back or the turn changed",
    ["outcome"],
)
SPEECH_OVER_ANSWERS = Counter(
    "voicemesh_edge_speech_over_answers_total",
    "Speech that started while an answer played and was held (edge/realtime/backchannel.py):"
    " `backchannel` (the answer resumed), `long` or `words` (a barge-in), `unheard` (no transcript"
    " in time: a barge-in)",
    ["outcome"],
)
TURN_MODEL_SECONDS = Histogram(
    "voicemesh_edge_turn_model_seconds",
    "One batched Smart Turn call (features and model) that asks whether user turns are complete"
    " (semantic_vad: edge/audio/turn_model.py)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0),
)
SEMANTIC_TURN_ENDS = Counter(
    "voicemesh_edge_semantic_turn_ends_total",
    "semantic_vad turns ended, `by` the turn model calling them complete at a pause or the eagerness"
    " timeout (the silence it waits after the model said not complete)",
    ["by"],
)
KEY_TURNS = Counter(
    "voicemesh_edge_key_turns_total",
    "Turns finished per key id, by outcome (completed, degraded, failed, cancelled): edge/tenancy/usage.py",
    ["key", "outcome"],
)
KEY_AUDIO_SECONDS = Counter(
    "voicemesh_edge_key_audio_seconds_total",
    "Audio seconds per API key id: `in` sent to a region, `out` region audio relayed to the client",
    ["key", "direction"],
)
KEY_TOKENS = Counter(
    "voicemesh_edge_key_tokens_total",
    "Tokens per API key id (the edge's estimate, as in response.usage), `input` or `output`",
    ["key", "kind"],
)
RELAY_SECONDS = Histogram(
    "voicemesh_edge_relay_seconds",
    "The edge's own time per relayed audio chunk: router yield (or the player getting free) to the socket",
    buckets=(0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25),
)
STAGE_SECONDS = Histogram(
    "voicemesh_edge_stage_seconds",
    "Each stage of a live response up to its first audio, as the edge times it (edge/responses/stages.py: "
    "eos, commit, route, connect, queue, region, degrade, relay, fallback; first_audio: end of speech "
    "to the first audio delta sent)",
    ["stage"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2, 3, 5, 8, 13, 20),
)

CONTENT_TYPE = CONTENT_TYPE_LATEST

MAX_KEY_LABELS = 500
"""Distinct ``key`` label values per process; later keys are counted under ``other`` (a scrape's
size and Prometheus's series count stay bounded however many keys exist)."""
_STORED_KEY_ID = re.compile(r"key_[0-9a-f]{16}")
_key_labels: set[str] = set()


def key_label(key_id: str) -> str:
    """The ``key`` label of a key id: a stored key's record id as it is (random, ``key_`` + 16 hex);
    any other id (a configured key's carries its first characters, a JWT's subject) as a hash of it,
    so a label reveals nothing of a key. At most ``MAX_KEY_LABELS`` of them, then ``other``."""
    label = key_id if _STORED_KEY_ID.fullmatch(key_id) else "key_" + sha256(key_id.encode()).hexdigest()[:16]
    if label in _key_labels:
        return label
    if len(_key_labels) >= MAX_KEY_LABELS:
        return "other"
    _key_labels.add(label)
    return label


def render() -> bytes:
    """The process's metrics (edge and router) in the Prometheus text format."""
    return generate_latest()


class Tally:
    """A count kept as a plain int and added to ``counters`` every ``every`` (and on ``flush``): a
    counter's own ``inc`` takes a lock and costs ~1 us, dear at 25 frames a second a stream (3 % of
    the edge's CPU at 600 streams, docs/benchmarks.md "Append hot path")."""

    __slots__ = ("_counters", "_every", "n")

    def __init__(self, *counters: Counter, every: int = 50) -> None:
        self._counters = counters
        self._every = every
        self.n = 0

    def add(self) -> None:
        self.n += 1
        if self.n >= self._every:
            self.flush()

    def flush(self) -> None:
        if self.n:
            for counter in self._counters:
                counter.inc(self.n)
            self.n = 0
