"""voicemesh region tier."""
