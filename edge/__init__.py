"""voicemesh edge tier."""
