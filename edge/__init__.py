"""voicemesh edge tier: the OpenAI Realtime API and audio API that clients talk to.

Packages, one concern each, from the top of the layering down (``docs/architecture.md``; the rules
are import-linter contracts in ``pyproject.toml``, checked by ``make lint``):

* ``app``: the process: ``services.EdgeServices`` wires everything (the composition root),
  ``asgi.create_app`` is the Litestar surface, ``server.serve_edge`` runs it under uvicorn.
* ``realtime``: one Realtime session (client events, settings, conversation, input turns, its
  response slot, transcription, resume).
* ``speech``: the audio API (speech, transcriptions), the speech cache, batches and webhooks,
  custom voices.
* ``responses``: one assistant response: the router's events relayed, audio paced like
  playback, Realtime events framed, the edge's own voice when no region answers.
* ``turns``: a turn through the router and what the caller heard of it.
* ``audio``: input audio, VAD (batched Silero), turn detection; the edge's voice (Piper).
* ``tenancy``: credentials, keys, per-key limits, residency, audit and usage.
* ``stores``: what outlives a request, in memory or in the shared Redis.
* ``shared``: settings, bounds, the Realtime event codec, the models' Protocols, metrics.

``edge.testing`` drives a real session with client event JSON and in-memory stand-ins.

Vendor additions stay within what the stock ``openai`` client accepts:

* ``response.metadata``: the client's own ``response.create`` metadata, plus ``voicemesh_region``
  (who served), ``voicemesh_degraded="true"`` and ``served_by="edge"`` (Piper answered),
  ``voicemesh_degraded_reason``, ``voicemesh_failed_over_from``, and in ``response.done``
  ``voicemesh_stages`` (compact JSON: milliseconds per stage, ``edge/responses/stages.py``).
* ``voicemesh.turn.queued`` events (``response_id``, ``position``, ``estimated_wait_s``) while the
  region queues the turn; the SDK yields unknown event types as they are.
* ``session.created``/``session.updated`` carry the session ``id``.
"""
