"""voicemesh infra tier."""
