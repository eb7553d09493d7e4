"""The ``voicemesh`` command line. Each tier's commands live in their own module here."""
