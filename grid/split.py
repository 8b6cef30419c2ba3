"""The held-out rule: the top share of runs by training FLOPs is held out from the fit.

Pure function of the planned FLOPs, applied when a design is made (before any result
exists) and recorded in each run's ``split`` column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["heldout_mask", "SPLIT_RULE"]

SPLIT_RULE = "top-flops:{fraction:g}"
"""How the rule is recorded (``top-flops:0.25``), the same string ``toolscale fit --holdout`` takes."""


def heldout_mask(flops: Sequence[float], fraction: float = 0.25) -> list[bool]:
    """True for runs held out: those with FLOPs at or above the ``ceil(fraction * n)``-th largest.

    Ties at the threshold are all held out, so runs of one size and recipe never
    straddle the split. ``fraction = 0`` holds out nothing.

    >>> heldout_mask([1, 2, 3, 4, 5, 6, 7, 8], 0.25)
    [False, False, False, False, False, False, True, True]
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"held-out fraction must be in [0, 1), got {fraction}")
    n = len(flops)
    k = math.ceil(fraction * n)
    if k == 0:
        return [False] * n
    threshold = sorted(flops, reverse=True)[k - 1]
    return [f >= threshold for f in flops]
