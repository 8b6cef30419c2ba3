"""How wrong the law is past an axis's tested maximum: a leave-the-top-out check per data axis.

The law is refitted on the fitted runs at or below half an axis's largest tested level and predicts the runs
above it (the top doubling), each ``d_i = log2(x_i / m)`` doublings past the refit's tested maximum ``m``. The
excess of that error over the runs' noise, ``sqrt(max(0, mean(r^2) - s^2)) / sqrt(mean(d^2))`` (``r`` the
residuals on the fit's residual scale, ``s`` the refit's residual SD), is the error per doubling past a tested
maximum. Holding out the whole top doubling keeps the step at least one doubling: a design with two close top
levels (a Latin hypercube's 970 and 1,024) would otherwise divide the noise by a step of 0.08 doublings.
``allocate`` adds ``sd x log2(level / tested max)`` to the prediction error of any arm that goes past an axis's
tested maximum, so an interval that extrapolates says so in its width. This is the rung cross-validation of
:mod:`fit.selection` applied along a data axis instead of model size; :func:`fit.experiment.fit_experiment`
stores it as :attr:`fit.models.FitResult.axis_extrapolation_sd`.

A quality axis holds out less: the levels above ``top / 1.25`` (``QUALITY_STEP``: the part of its range that
``allocate``'s default ``max_extrapolation`` steps past, again). A quality axis is linear from its baseline
(often 0), so its lower half holds little of its effect: refitted there, a law could not pin a small quality
effect down and measured 0.3-0.6 score points per doubling on a simulated truth the law contains (one
experiment of ``benchmarks/next_runs.py``). The axis's top level is always held out, at least
``log2(1.25) = 0.32`` doublings past the refit's maximum.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from fit.errors import FitError
from fit.fitting import fit_law
from fit.laws import Law
from fit.models import Points

__all__ = ["axis_extrapolation_sd", "QUALITY_STEP"]

QUALITY_STEP = 1.25
"""A quality axis's refit keeps its levels up to ``top / QUALITY_STEP`` (a diversity axis's: up to ``top / 2``)."""


def axis_extrapolation_sd(points: Points, law: Law, axes: Sequence[str], *,
                          fixed: Mapping[str, float] | None = None) -> dict[str, float]:
    """``axis -> error per doubling past its tested maximum`` for each of ``axes`` with 2+ levels at or below
    ``top / step`` (``step`` 2, or :data:`QUALITY_STEP` for a quality input of ``law``) among the ``fit`` points
    (residual units: score points, log units for log residuals); axes where the check cannot run (fewer levels,
    a refit that fails) are left out. Held-out points are never used.
    """
    if law.stages is not None:
        return {}
    kinds = {i.name: i.kind for i in law.inputs}
    fitted = points.subset(points.split_array() == "fit")
    if fitted.final:
        fitted = fitted.subset(fitted.final)
    out: dict[str, float] = {}
    for axis in axes:
        if axis not in fitted.inputs:
            continue
        x = np.asarray(fitted.inputs[axis], dtype=float)
        levels = np.unique(x)
        below = levels[levels <= levels[-1] / (QUALITY_STEP if kinds.get(axis) == "quality" else 2.0)]
        if below.size < 2 or not below[-1] > 0:
            continue
        seen = float(below[-1])
        split = ["heldout" if v > seen else "fit" for v in x]
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
        d = np.log2(x[x > seen] / seen)
        excess = max(0.0, float(np.mean(r ** 2)) - res.residual_sd ** 2)
        out[axis] = math.sqrt(excess) / float(np.sqrt(np.mean(d ** 2)))
    return out
