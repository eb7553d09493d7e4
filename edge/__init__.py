"""voicemesh edge tier: the OpenAI-Realtime WebSocket clients talk to.

``edge.app.create_app`` (Litestar) serves ``/v1/realtime``, ``/v1/realtime/client_secrets``,
``/status`` and ``/health``; ``edge.server.serve_edge`` runs it. Per session, ``edge.session``
handles client events, ``edge.input_audio`` + ``edge.vad`` (batched Silero) + ``edge.turn_detector``
find turns, and ``edge.response`` relays a ``router.api.TurnRouter``'s events as Realtime events,
falling back to ``edge.fallback_voice`` (Piper) when no region can answer.

Vendor additions stay within what the stock ``openai`` client accepts:

* ``response.metadata``: ``voicemesh_region`` (who served), ``voicemesh_degraded="true"`` and
  ``served_by="edge"`` (Piper answered), ``voicemesh_degraded_reason``, ``voicemesh_failed_over_from``.
* ``voicemesh.turn.queued`` events (``response_id``, ``position``, ``estimated_wait_s``) while the
  region queues the turn; the SDK yields unknown event types as they are.
* ``session.created``/``session.updated`` carry the session ``id``.
"""
