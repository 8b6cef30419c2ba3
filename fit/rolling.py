"""Rolling validation up the model ladder (``--holdout rungs:K``).

Step ``j`` (``j = K, ..., M - 1`` for ``M`` distinct model sizes ``N_0 < ... < N_{M-1}``)
fits the runs of the ``j`` smallest sizes and predicts the runs of size ``N_j`` (larger
sizes are left out of that step). Each step's error says how well the law extrapolates
one rung up from what it had seen then; the last step is the usual "fit everything but
the top rung". Steps never see the size they predict.
"""

from __future__ import annotations

import numpy as np

from fit.fitting import fit_law
from fit.holdout import model_sizes
from fit.laws import Law
from fit.models import Points, RollingStep

__all__ = ["rolling_steps"]


def rolling_steps(points: Points, law: Law, k: int, *, n_bootstrap: int = 0, seed: int = 0, n_starts: int = 8,
                  max_grid: int = 8192, huber_delta: float | None = None, n_jobs: int | None = None,
                  method: str = "trf") -> list[RollingStep]:
    """One :class:`RollingStep` per rung above the ``k`` smallest (see the module docstring).

    Raises :class:`fit.errors.FitInputError` when the points have fewer than ``k + 1`` model sizes.
    """
    from fit.errors import FitInputError

    sizes = model_sizes(points, k)
    if k < 2 and any(i.kind == "size" for i in law.inputs):
        raise FitInputError(f"--holdout rungs:{k} fits a single model size in its first step; law {law.name!r} "
                            "has a size term and needs 2+: use rungs:2 or more")
    n = np.asarray(points.inputs["N"], dtype=float)
    out = []
    for j in range(k, len(sizes)):
        keep = n <= sizes[j]
        step = points.subset(keep)
        step = step.model_copy(update={"split": ["heldout" if x == sizes[j] else "fit" for x in n[keep]]})
        fit = fit_law(step, law, n_bootstrap=n_bootstrap, seed=seed, n_starts=n_starts, max_grid=max_grid,
                      huber_delta=huber_delta, n_jobs=n_jobs, method=method, holdout_rule=f"rungs:{k}",
                      holdout_source=f"rolling step {j - k + 1}")
        h = fit.heldout
        assert h is not None  # noqa: S101 - the predicted size always has runs (internal invariant)
        rel = float(h.relative_mae if h.relative_mae is not None else np.nan)
        out.append(RollingStep(fit_sizes=sizes[:j], predicted_size=sizes[j], n=h.n, mae=h.mae, relative_mae=rel,
                               max_error=h.max_error, interval_coverage=h.interval_coverage,
                               converged=fit.converged))
    return out
