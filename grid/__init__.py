"""grid: see README.md."""
