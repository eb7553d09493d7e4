"""One OpenAI Realtime session: client events read and dispatched, settings, conversation, input
turns, its response slot, transcription and resume."""
