"""probes: see README.md."""
