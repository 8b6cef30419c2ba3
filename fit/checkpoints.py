"""Checkpoints as data for a two-step law: skip each run's warm-up, smooth its noisy evaluations.

The OLMo model ladder (Bhagia et al. 2024, arXiv 2412.04403, ``src/scaling/utils.py`` of allenai/OLMo-ladder)
fits stage 2 (accuracy from task loss) on every checkpoint of every ladder run, after leaving out the first
10% of each run's checkpoints and replacing each value by the moving average of the last 5; stage 1 (task loss
from N and D) sees each run's mean over its last 5 checkpoints. :func:`smooth_checkpoints` does the same on
:class:`fit.models.Points` whose ``checkpoint_of`` names each point's run: the target and the intermediate are
averaged, the final checkpoint (the one stage 1 reads) keeps its place.
"""

from __future__ import annotations

import math

import numpy as np

from fit.models import Points

__all__ = ["smooth_checkpoints", "moving_average"]


def moving_average(x: np.ndarray, k: int) -> np.ndarray:
    """Trailing mean over ``k`` values (fewer at the start): ``out[i] = mean(x[max(0, i - k + 1): i + 1])``."""
    c = np.cumsum(np.asarray(x, dtype=float))
    out = c.copy()
    out[k:] = c[k:] - c[:-k]
    counts = np.minimum(np.arange(1, x.size + 1), k)
    return out / counts


def smooth_checkpoints(points: Points, *, smooth: int = 1, skip_first: float = 0.0,
                       intermediate: str | None = None) -> Points:
    """``points`` with each run's first ``ceil(skip_first * n)`` checkpoints left out (its final one always
    kept) and the target and ``intermediate`` input replaced by their trailing moving average over ``smooth``
    checkpoints, in step order. Points that are not checkpoints (no ``checkpoint_of``) are returned as they are.
    """
    if not points.checkpoint_of or (smooth <= 1 and skip_first <= 0.0):
        return points
    steps = np.asarray(points.steps if points.steps else np.arange(points.n), dtype=float)
    final = np.asarray(points.final if points.final else [True] * points.n, dtype=bool)
    runs: dict[str, list[int]] = {}
    for i, run in enumerate(points.checkpoint_of):
        runs.setdefault(run, []).append(i)
    keep: list[int] = []
    y = points.y_array().copy()
    inter = np.asarray(points.inputs[intermediate], dtype=float).copy() if intermediate else None
    for idx in runs.values():
        order = sorted(idx, key=lambda i: steps[i])
        skip = math.ceil(skip_first * len(order))
        kept = [i for j, i in enumerate(order) if j >= skip or final[i]]
        ix = np.asarray(kept, dtype=int)
        y[ix] = moving_average(y[ix], smooth)
        if inter is not None and np.all(np.isfinite(inter[ix])):
            inter[ix] = moving_average(inter[ix], smooth)
        keep.extend(kept)
    out = points.model_copy(update={"y": y.tolist(), "inputs": {**points.inputs, **(
        {intermediate: inter.tolist()} if inter is not None else {})}})
    return out.subset(sorted(keep))
