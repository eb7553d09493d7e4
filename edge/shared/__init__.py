"""What every part of the edge shares: settings, bounds, the Realtime event codec, the models'
Protocols, metrics and the session's state. Imports nothing else of the edge."""
