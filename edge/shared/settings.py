"""The edge's settings: where it listens, who may connect, its models and its limits.

Plain frozen dataclasses; ``voicemesh/cli/edge.py`` builds them from the profile and the environment.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from edge.shared.egress import ALLOW_ENV, EgressPolicy, Network, parse_networks
from edge.shared.voices import CPU_VOICES, VoiceTable

BACKCHANNEL_WORDS = (
    "mm", "mmm", "hm", "hmm", "mhm", "mhmm", "mmhm", "mmhmm", "mm-hm", "mm-hmm", "uh-huh", "uh", "huh",
    "ah", "oh", "yeah", "yes", "yep", "yup", "right", "okay", "ok", "sure", "alright", "i", "see", "got",
    "it", "cool", "exactly", "true", "wow", "nice", "great", "indeed", "totally", "agreed",
)  # fmt: skip
"""What a caller says over an answer without asking it to stop, as Whisper writes it (each word
lowercased, the punctuation around it dropped; "i see", "got it" are two of them)."""


@dataclass(frozen=True)
class BackchannelSettings:
    """Speech over an answer that may be a backchannel ("mm-hm", "yeah"): the answer's audio pauses
    at once and resumes if it was one (``edge/realtime/backchannel.py``, docs/architecture.md
    "Barge-in"). A session turns it on or off with ``turn_detection.voicemesh_backchannel``."""

    enabled: bool = True
    """New sessions' default; off, speech over an answer is a barge-in at once (as OpenAI's)."""
    max_ms: int = 1000
    """Speech still going this long after it started is an interruption without waiting for its
    words (LiveKit's ``min_interruption_duration`` is 0.5 s; a backchannel rarely lasts 1 s)."""
    words: tuple[str, ...] = BACKCHANNEL_WORDS
    prompt: str = "Mm-hm. Yeah. Right. Uh-huh. Okay."
    """Whisper's prompt for the short speech, so that a hummed backchannel is written as one, not as
    words it sounds like (espeak-ng's "mm-hm": "with him.", "But um..."). It costs a short
    interruption now and then: ``voicemesh bench backchannel-words`` (docs/benchmarks.md). "": none."""
    transcribe_timeout_s: float = 3.0
    """Longest wait for a short speech's words (a region's transcribe-only turn); past it, or when no
    region could transcribe it, it is taken as an interruption (what it was before this feature)."""


@dataclass(frozen=True)
class VadSettings:
    """Server VAD defaults (each session may change them with ``session.update``)."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    speculate_after_ms: int = 192
    """At a pause this long in the speech (shorter than a session's ``silence_duration_ms``), its
    answer starts unseen, and is shown only if the turn ends there (``edge/realtime/speculation.py``): the
    region works through the rest of the silence window. 0: off."""
    backchannel: BackchannelSettings = field(default_factory=BackchannelSettings)
    semantic_pause_ms: int = 192
    """``semantic_vad``: at a pause this long the turn model is asked whether the turn is complete
    (``edge/realtime/semantic_turns.py``); its answer may start there too, as above."""


@dataclass(frozen=True)
class ContentLimits:
    """What one session may send or ask for, checked at the edge before any region is involved
    (``edge/shared/limits.py`` enforces them). A region refuses more than its own limits, and a refusal
    after a turn left the edge costs every region a try; so the edge's bounds sit at or inside the
    regions' (``region/settings.py`` ``LimitSettings``) and the model's context."""

    max_text_chars: int = 4_000
    """One message item's text, and a typed turn: the region's ``max_text_chars``."""
    max_instructions_chars: int = 4_000
    """``instructions`` (~1,300 tokens by the estimate below): room is left in the context for the
    history, the turn and the answer."""
    max_voice_chars: int = 64
    """A voice name (Kokoro's are ~10 characters); longer is never a voice."""
    context_tokens: int = 2_048
    """The served model's context (``--max-model-len`` of the smallest profile): instructions,
    history, the turn and ``max_output_tokens`` must fit in it together."""
    reserved_tokens: int = 256
    """Kept for what the edge does not see: the region's system prompt, the chat template, and the
    transcript of an audio turn."""
    max_history_chars: int = 32_000
    """The region's ``max_history_chars``: history past it is trimmed as if over the context."""
    max_output_tokens: int = 1_024
    """Largest ``max_output_tokens`` (``"inf"`` means this); a spoken answer is far shorter."""
    max_prefix_padding_ms: int = 5_000
    """Audio kept before speech starts: the VAD buffer holds this much while nobody speaks."""
    min_silence_duration_ms: int = 32
    """One VAD chunk: shorter silences cannot be measured."""
    max_silence_duration_ms: int = 10_000
    """Silence that ends a turn; longer and a turn never ends in practice."""
    max_idle_timeout_ms: int = 30 * 60_000
    """``turn_detection.idle_timeout_ms`` (accepted, not acted on): at most a session's length."""


@dataclass(frozen=True)
class LimitSettings:
    max_sessions_per_key: int = 50
    connect_rate_per_s: float = 5.0
    """Token bucket per key for new sessions (minting client secrets has its own): refill rate..."""
    connect_burst: int = 20
    """...and burst allowance."""
    events_per_s: float = 200.0
    """Token bucket per session for client events (audio appends included)."""
    events_burst: int = 400
    max_event_bytes: int = 1 << 20
    max_buffer_s: float = 30.0
    """Longest input audio buffer, so the most audio one turn sends: the region's ``max_audio_s``.
    A manual buffer past it is refused; under server VAD endless speech keeps its last seconds."""
    max_session_s: float = 30 * 60.0
    idle_timeout_s: float = 5 * 60.0
    """A session with no client event for this long is closed (after an ``error`` event saying so),
    so an abandoned socket does not hold its key's slot until ``max_session_s``."""
    handshake_timeout_s: float = 10.0
    """Longest the Realtime handshake may take (credentials checked, limits, accept)."""
    max_credential_bytes: int = 4096
    """Longest bearer token accepted; longer ones are refused at once (431) without a lookup."""
    mint_rate_per_s: float = 1.0
    """Token bucket per key for minting client secrets, apart from the connect bucket..."""
    mint_burst: int = 10
    """...and its burst allowance."""
    max_history_messages: int = 40
    content: ContentLimits = field(default_factory=ContentLimits)
    """What one session may ask for (sizes, tokens, ``session.update`` ranges): ``edge/shared/limits.py``."""
    max_sessions: int = 1000
    """Open sessions per edge process, all keys together: past it a handshake gets 429, so one
    busy edge sheds load (to its peers behind the load balancer) instead of slowing every session."""
    max_head_bytes: int = 8192
    """Longest HTTP request head (request line and headers): past it 431, before any parsing by the
    app. 8 KiB is what the WebSocket parser accepts per line, and far above any real token."""
    head_timeout_s: float = 10.0
    """Longest a client may take to send its request head: a slow-loris connection is closed."""


@dataclass(frozen=True)
class KeySettings:
    """API keys stored as data (``edge/tenancy/keys.py``, ``docs/keys.md``)."""

    cache_s: float = 0.5
    """How long an edge trusts a stored key it looked up: a key revoked or rotated through any edge
    is refused by every edge once this has passed."""
    revocation_check_s: float = 0.5
    """How often an edge checks the stored keys of its open sessions: a revoked key's sessions end
    (``api_key_revoked``) within about this."""
    session_lease_s: float = 30.0
    """A session's slot in its key's shared cap expires this long after its edge last renewed it
    (every third of it): the slots of a crashed edge's sessions come free by themselves."""


@dataclass(frozen=True)
class SpeechCacheSettings:
    """The shared cache of ``POST /v1/audio/speech`` results (``edge/speech/speech_cache.py``)."""

    enabled: bool = True
    ttl_s: int = 24 * 3600
    """How long an entry lives after it is written."""
    max_entry_bytes: int = 4 * 2**20
    """An encoded result past this is not stored (about 40 s of WAV, 4 min of MP3)."""


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name, "")
    try:
        return float(raw) if raw else default
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None


@dataclass(frozen=True)
class BatchSettings:
    """Speech batches (``edge/speech/speech_batches.py``): jobs in the shared store, worked by every edge."""

    workers: int = 1
    """Items this edge reads aloud at once (each region also caps its batch work: ``--max-batch``)."""
    max_items: int = 1000
    lease_s: float = field(default_factory=lambda: _env_float("VOICEMESH_BATCH_LEASE_S", 30.0))
    """An item (or a webhook) a worker claimed is claimed again by any edge once this passes without
    a heartbeat: what an edge killed mid-item costs."""
    poll_s: float = 0.5
    """How often an idle worker looks for work."""
    retry_s: float = 2.0
    """First wait before an item no region could take (all busy with live turns, or none left) is
    tried again; doubled each time up to ``max_retry_s``."""
    max_retry_s: float = 30.0
    item_deadline_s: float = 3600.0
    """An item not read aloud this long after the job was made fails (``no_region_available``)."""
    result_ttl_s: int = 7 * 24 * 3600
    """How long a job and its audio are kept."""
    webhook_attempts: int = 8
    """Deliveries tried (on a non-2xx answer or no answer) before the webhook is given up."""
    webhook_timeout_s: float = 10.0
    webhook_allow: tuple[Network, ...] = field(
        default_factory=lambda: parse_networks(os.environ.get(ALLOW_ENV, ""))
    )
    """Non-public networks webhooks may go to all the same (local receivers); every other
    loopback, private, link-local or multicast address is refused (``edge/shared/egress.py``)."""

    @property
    def egress(self) -> EgressPolicy:
        return EgressPolicy(self.webhook_allow)


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


@dataclass(frozen=True)
class TwilioSettings:
    """Phone calls through Twilio Media Streams (``edge/app/twilio/``, ``docs/phone.md``)."""

    auth_token: str | None = field(default_factory=lambda: _env("VOICEMESH_TWILIO_AUTH_TOKEN"))
    """The Twilio account's auth token: every request is checked against its ``X-Twilio-Signature``.
    Unset: the Twilio endpoints are off (they refuse, naming this setting)."""
    api_key: str | None = field(default_factory=lambda: _env("VOICEMESH_TWILIO_API_KEY"))
    """The voicemesh credential a call runs under (its tenant, limits, residency, voices) unless the
    stream's ``<Parameter name="voicemesh_key">`` brings one (a client secret minted per call)."""
    public_url: str | None = field(default_factory=lambda: _env("VOICEMESH_TWILIO_PUBLIC_URL"))
    """``https://voice.example.com``: the edge as Twilio reaches it (behind TLS termination or a
    proxy), whose URLs Twilio signs; unset, the request's own ``Host`` is used."""


@dataclass(frozen=True)
class EdgeSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    api_keys: tuple[str, ...] = ()
    admin_keys: tuple[str, ...] = ()
    """Keys with the ``admin`` scope (``/status``, the ops page); they may also open sessions."""
    jwt_secret: str | None = None
    """HS256 secret; when set, Bearer JWTs signed with it are accepted (``sub`` names the key; a
    ``scope`` claim listing ``admin`` grants the admin scope)."""
    client_secret_ttl_s: int = 600
    vad_model: str = ""
    vad_runtime: str = "openvino"
    """What runs Silero: ``openvino`` (a third of the CPU per chunk) or ``onnxruntime``
    (``edge/audio/silero.py``)."""
    piper_model: str = ""
    turn_model: str = ""
    """Smart Turn v3.2 ONNX (``semantic_vad``'s end of turn, ``edge/audio/turn_model.py``); unset,
    ``semantic_vad`` turns end at their eagerness timeout."""
    hold_message: str = "Sorry, I can't answer that right now. Please try again in a moment."
    default_voice: str = ""
    voices: VoiceTable = field(default_factory=lambda: CPU_VOICES)
    """The voice names sessions may ask for and the region voice of each (``edge/shared/voices.py``): the
    profile's (``voicemesh/profiles/``); the default is the ``cpu`` profile's."""
    default_instructions: str = "You are a helpful voice assistant. Answer briefly."
    store_url: str | None = None
    """``redis://...`` keeps sessions and client secrets in Redis (shared by edges); else memory."""
    redis_timeout_s: float = 0.5
    """Connect and read timeout of every Redis call: past it the edge goes on without Redis."""
    vad: VadSettings = field(default_factory=VadSettings)
    limits: LimitSettings = field(default_factory=LimitSettings)
    playback_lead_s: float = 0.4
    """How far ahead of real-time playback audio is sent: what was sent is (nearly) what was heard."""
    resume: ResumeSettings = field(default_factory=lambda: ResumeSettings())
    """Session snapshots, resume and graceful drain (``docs/resume.md``)."""
    keys: KeySettings = field(default_factory=KeySettings)
    """Stored API keys: lookup cache, revocation checks, session leases (``docs/keys.md``)."""
    models: dict[str, str] = field(default_factory=dict)
    """The profile's model names by kind (``llm``, ``stt``, ``tts``): ``GET /v1/models`` lists them."""
    speech_cache: SpeechCacheSettings = field(default_factory=SpeechCacheSettings)
    batches: BatchSettings = field(default_factory=BatchSettings)
    webrtc_connect_s: float = 15.0
    """Longest a WebRTC call (``POST /v1/realtime/calls``) may take to connect (ICE and DTLS), and to
    come back after its connection drops: past it the call is closed and all it held is freed."""
    twilio: TwilioSettings = field(default_factory=TwilioSettings)


@dataclass(frozen=True)
class ResumeSettings:
    ttl_s: int = 15 * 60
    """A session's snapshot lives this long after its last write: how long it may be resumed."""
    snapshot_interval_s: float = 0.5
    """Throttle of snapshot writes while an answer plays (its heard part), and of the takeover check."""
    drain_s: float = field(default_factory=lambda: _env_float("VOICEMESH_DRAIN_S", 20.0))
    """SIGTERM: longest wait for running responses before sessions are told to resume elsewhere.
    The Kubernetes module's grace period is this plus a margin (``infra/modules/edge-k8s``)."""
    retry_after_s: int = 2
    """``Retry-After`` of the 503 a draining edge answers new connections with."""
