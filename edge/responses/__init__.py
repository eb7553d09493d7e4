"""One assistant response: the router's events relayed, audio paced like playback, Realtime events
framed, and the edge's voice when no region answers."""
