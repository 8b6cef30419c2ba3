"""fit: see README.md."""
