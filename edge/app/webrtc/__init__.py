"""The Realtime API over WebRTC (OpenAI's ``/v1/realtime/calls``): ``routes`` (the offer and the
answer), ``call`` (one peer connection and its session), ``bridge`` (server events onto the
``oai-events`` data channel, audio onto the track), ``tracks`` (Opus frames to and from 24 kHz PCM16).
"""
