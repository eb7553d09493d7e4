"""voicemesh: the command line and the composition root that wires the tiers together."""

__version__ = "0.1.0"
