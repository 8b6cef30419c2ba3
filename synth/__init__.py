"""synth: see README.md."""
