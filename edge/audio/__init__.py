"""A session's input audio, from the client's format to VAD turns, and the edge's own voice (Piper)."""
