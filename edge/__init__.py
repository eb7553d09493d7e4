"""voicemesh edge tier: the OpenAI-Realtime WebSocket clients talk to.

``edge.app.create_app`` (Litestar) serves ``/v1/realtime``, ``/v1/realtime/client_secrets``,
``/status``, ``/health`` and ``/metrics`` (``edge.metrics`` plus the router's); ``edge.server.serve_edge``
runs it. ``edge.services.EdgeServices`` holds what sessions share: a ``router.api.TurnRouter`` and the
models behind ``edge.protocols`` (``edge.vad``: batched Silero; ``edge.fallback_voice``: Piper).

Frames from the client: ``edge.direct_ws`` (the WebSocket protocol: uvicorn's, cutting frames
itself so an audio append is taken in the transport's callback, past the ASGI queue) and
``edge.client_frames`` (a session's reader, its idle and maximum-duration timers).

One session (``edge.session``: reads and dispatches client events):

* ``edge.session_update``: ``session.update`` -> ``SessionState`` -> ``session.updated``; voices
  through one table (``edge.voices``), audio formats (``edge.audio_formats``: PCM16 24 kHz, G.711)
* ``edge.input_turns``: input audio (``edge.input_audio``), VAD turns (``edge.turn_detector``), commits
* ``edge.conversation``: items, the ``previous_item_id`` chain, the history (its only writer)
* ``edge.response_lifecycle``: starts, cancels and finishes the session's one ``edge.response``, with
  what ``response.create`` asked for (``edge.response_params``)
* ``edge.transcription``: input audio transcription (``.delta``/``.completed``/``.failed``), from a
  response's region or from a transcribe-only turn of its own

One response (``edge.response``): ``edge.relay`` interprets the router's events, ``edge.playback``
paces the audio like playback, ``edge.response_frames`` frames the Realtime events, and
``edge.fallback_reply`` speaks with the edge's own voice when no region can answer.

Who may connect: ``edge.auth`` (keys, JWTs, scopes), ``edge.keys`` (keys stored as data, with
``edge.key_store`` and the admin API ``edge.key_routes``), ``edge.client_secrets`` (hashed ``ek_``
secrets), ``edge.limits`` (every bound, once; per key across edges: ``edge.shared_limits``); shared
state in ``edge.shared_store`` (Redis, with a local fallback during an outage).

``edge.testing`` drives a real session with client event JSON and in-memory stand-ins.

Vendor additions stay within what the stock ``openai`` client accepts:

* ``response.metadata``: the client's own ``response.create`` metadata, plus ``voicemesh_region``
  (who served), ``voicemesh_degraded="true"`` and ``served_by="edge"`` (Piper answered),
  ``voicemesh_degraded_reason``, ``voicemesh_failed_over_from``, and in ``response.done``
  ``voicemesh_stages`` (compact JSON: milliseconds per stage, ``edge/stages.py``).
* ``voicemesh.turn.queued`` events (``response_id``, ``position``, ``estimated_wait_s``) while the
  region queues the turn; the SDK yields unknown event types as they are.
* ``session.created``/``session.updated`` carry the session ``id``.
"""
