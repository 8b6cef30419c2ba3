"""How wrong the law is past an axis's tested maximum: a leave-the-top-level-out check per diversity axis.

The law is refitted on the fitted runs below an axis's largest tested level and predicts the runs at that
level, a step of ``log2(top / second)`` doublings past what it saw. The excess of that error over the runs'
noise, ``sqrt(max(0, RMS(r)^2 - s^2)) / log2(top / second)`` (``r`` the residuals on the fit's residual scale,
``s`` the refit's residual SD), is the error per doubling past a tested maximum. ``allocate`` adds
``sd x log2(level / tested max)`` to the prediction error of any arm that goes past an axis's tested maximum,
so an interval that extrapolates says so in its width. This is the rung cross-validation of
:mod:`fit.selection` applied along a data axis instead of model size; :func:`fit.experiment.fit_experiment`
stores it as :attr:`fit.models.FitResult.axis_extrapolation_sd`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from fit.errors import FitError
from fit.fitting import fit_law
from fit.laws import Law
from fit.models import Points

__all__ = ["axis_extrapolation_sd"]


def axis_extrapolation_sd(points: Points, law: Law, axes: Sequence[str], *,
                          fixed: Mapping[str, float] | None = None) -> dict[str, float]:
    """``axis -> error per doubling past its tested maximum`` for each of ``axes`` with 3+ levels among the
    ``fit`` points (residual units: score points, log units for log residuals); axes where the check cannot
    run (fewer levels, a refit that fails) are left out. Held-out points are never used.
    """
    if law.stages is not None:
        return {}
    fitted = points.subset(points.split_array() == "fit")
    if fitted.final:
        fitted = fitted.subset(fitted.final)
    out: dict[str, float] = {}
    for axis in axes:
        if axis not in fitted.inputs:
            continue
        x = np.asarray(fitted.inputs[axis], dtype=float)
        levels = np.unique(x)
        if levels.size < 3 or not levels[-2] > 0:
            continue
        top, second = float(levels[-1]), float(levels[-2])
        split = ["heldout" if v == top else "fit" for v in x]
        try:
            res = fit_law(fitted.model_copy(update={"split": split}), law, n_starts=2, max_grid=512, n_bootstrap=0,
                          maxiter=500, fixed=dict(fixed) if fixed else None)
        except FitError:
            continue
        if not res.converged or res.heldout is None:
            continue
        y = np.array([p.actual for p in res.heldout.points])
        pred = np.array([p.predicted for p in res.heldout.points])
        r = np.log(np.maximum(y, 1e-300) / np.maximum(pred, 1e-300)) if res.residual_scale == "log" else y - pred
        rms = float(np.sqrt(np.mean(r ** 2)))
        out[axis] = math.sqrt(max(0.0, rms ** 2 - res.residual_sd ** 2)) / math.log2(top / second)
    return out
