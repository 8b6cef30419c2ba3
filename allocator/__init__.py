"""allocator: see README.md."""
