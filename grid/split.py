"""The held-out rule: the top share of runs by training FLOPs is held out from the fit.

Pure function of the planned FLOPs, applied when a design is made (before any result
exists) and recorded in each run's ``split`` column.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["heldout_mask", "heldout_threshold", "SPLIT_RULE"]

SPLIT_RULE = "top-flops:{fraction:g}"
"""How the rule is recorded (``top-flops:0.25``), the same string ``toolscale fit --holdout`` takes."""


def heldout_mask(flops: Sequence[float], fraction: float = 0.25, *, min_fit: int = 0) -> list[bool]:
    """True for runs held out: those with FLOPs at or above the ``ceil(fraction * n)``-th largest.

    Ties at the threshold are all held out, so runs of one size and recipe never
    straddle the split -- unless that would leave fewer than ``min_fit`` runs to fit
    (``[1e18] * 8`` would hold out all 8): then the tied group at the threshold stays in
    the fit and only the runs strictly above it are held out (none, when every run ties).
    ``min_fit = 0`` (the default, used by designs, which size the top cell so that it is exactly the
    held-out set) keeps the plain tie rule. ``fraction = 0`` holds out nothing.

    >>> heldout_mask([1, 2, 3, 4, 5, 6, 7, 8], 0.25)
    [False, False, False, False, False, False, True, True]
    >>> heldout_mask([5, 5, 5, 5], 0.25, min_fit=1)
    [False, False, False, False]
    >>> heldout_mask([1, 5, 5, 5], 0.5, min_fit=1)
    [False, True, True, True]
    """
    cut = heldout_threshold(flops, fraction, min_fit=min_fit)
    if cut is None:
        return [False] * len(flops)
    threshold, strict = cut
    return [f > threshold if strict else f >= threshold for f in flops]


def heldout_threshold(flops: Sequence[float], fraction: float = 0.25, *,
                      min_fit: int = 0) -> tuple[float, bool] | None:
    """The rule of :func:`heldout_mask` as ``(threshold, strict)``: held out are the runs with FLOPs
    ``> threshold`` when ``strict`` else ``>= threshold``; None when nothing is held out.

    For callers that apply the rule to many rows themselves (the bulk importer applies it in SQL).
    """
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"held-out fraction must be in [0, 1), got {fraction}")
    n = len(flops)
    k = math.ceil(fraction * n)
    if k == 0:
        return None
    ordered = sorted(flops, reverse=True)
    threshold = ordered[k - 1]
    held = sum(1 for f in ordered if f >= threshold)
    return (float(threshold), n - held < min_fit)
