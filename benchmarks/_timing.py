"""Timing helper shared by the benchmark scripts (imported as ``_timing``: a script's folder is on sys.path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

__all__ = ["median_time"]


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn``, in seconds (``time.perf_counter``)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
