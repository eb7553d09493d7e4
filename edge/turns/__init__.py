"""A turn sent through the router and read back: ``reader`` (the one reader of a router's events),
``heard`` (what the caller heard), ``edge_voice`` (the edge's own voice when no region could finish),
and the speak-only (``speech_stream``) and transcribe-only (``transcribe_turn``) turns built on them."""
