"""The speech service: OpenAI's audio API (speech, transcriptions), the speech cache, batch synthesis
with webhooks, and custom voices."""
