"""The edge process: its services wired together (the composition root), its HTTP and WebSocket
surface, and the server that runs it."""
