"""How wrong the law is past an axis's tested maximum: a leave-the-top-level-out check per diversity axis.

The law is refitted on the fitted runs below an axis's largest tested level and predicts the runs at that
level, a step of ``log2(top / second)`` doublings past what it saw. The excess of that error over the runs'
noise, ``sqrt(max(0, RMS(r)^2 - s^2)) / log2(top / second)`` (``r`` the residuals on the fit's residual scale,
``s`` the refit's residual SD), is the error per doubling past a tested maximum. ``allocate`` adds
``sd x log2(level / tested max)`` to the prediction error of any arm that goes past an axis's tested maximum,
so an interval that extrapolates says so in its width. This is the rung cross-validation of
:mod:`fit.selection` applied along a data axis instead of model size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["axis_extrapolation_sd"]

_CACHE: dict[tuple, dict[str, float]] = {}


def axis_extrapolation_sd(fit: Any, runs: Sequence[Any], axes: Sequence[str]) -> dict[str, float]:
    """``axis -> error per doubling past its tested maximum`` for each of ``axes`` with 3+ tested levels
    (residual units: score points, log units for log residuals); axes where the check cannot run are left out.

    ``fit``: the stored :class:`fit.models.FitResult`; ``runs``: the experiment's fitted (not held-out) runs.
    """
    from fit.data import points_from_runs
    from fit.errors import FitError
    from fit.fitting import fit_law
    from fit.laws import law_of

    law = law_of(fit)
    if law.stages is not None:
        return {}
    key = (fit.data_hash, fit.law, tuple(sorted(axes)))
    if key in _CACHE:
        return dict(_CACHE[key])
    try:
        points = points_from_runs(runs, benchmark=fit.benchmark, metric=fit.metric, inputs=law.axes)
    except FitError:
        return {}
    points = points.model_copy(update={"split": ["fit"] * points.n})
    out: dict[str, float] = {}
    for axis in axes:
        if axis not in points.inputs:
            continue
        x = np.asarray(points.inputs[axis], dtype=float)
        levels = np.unique(x)
        if levels.size < 3 or not levels[-2] > 0:
            continue
        top, second = float(levels[-1]), float(levels[-2])
        split = ["heldout" if v == top else "fit" for v in x]
        try:
            res = fit_law(points.model_copy(update={"split": split}), law, n_starts=2, max_grid=512, n_bootstrap=0,
                          maxiter=500, fixed=dict(fit.fixed) or None)
        except FitError:
            continue
        if not res.converged or res.heldout is None:
            continue
        y = np.array([p.actual for p in res.heldout.points])
        pred = np.array([p.predicted for p in res.heldout.points])
        r = np.log(np.maximum(y, 1e-300) / np.maximum(pred, 1e-300)) if res.residual_scale == "log" else y - pred
        rms = float(np.sqrt(np.mean(r ** 2)))
        excess = math.sqrt(max(0.0, rms ** 2 - res.residual_sd ** 2))
        out[axis] = excess / math.log2(top / second)
    _CACHE[key] = out
    return dict(out)
