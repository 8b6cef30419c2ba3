"""slurm: see README.md."""
