"""The ``twentyone`` command: one verb per job."""
