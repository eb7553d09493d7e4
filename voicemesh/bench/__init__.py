"""The benchmarks behind ``voicemesh bench region|edge|router`` (docs/benchmarks.md shows results).

* ``region``  per-stage latency over real turns, and the streaming pipeline against the naive one
* ``edge``    idle-session memory, audio streams per core with batched VAD, relay cost per chunk
* ``router``  failover gap after a crash or a hang mid-answer, and the cost of a routing decision
* ``e2e``     end of speech to first audio through the edge, next to a stock Pipecat pipeline

They exercise the tiers from outside, as tools: nothing in ``edge/``, ``router/`` or ``region/``
imports them.
"""
