"""Uncertainty: bootstrap refits over runs, parameter intervals and prediction intervals.

Each bootstrap replicate resamples the fitted runs with replacement and refits the law
from the full-data optimum (one L-BFGS-B run, warm start). Resampling indices are drawn
up front from one seeded generator, so the draws do not depend on how many worker
processes run them. Workers are forked (the law, whose formula is a closure, is
inherited rather than pickled); where fork is unavailable the refits run serially.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from fit.laws import Law
from fit.models import FitResult, ParamInterval, Points
from fit.optimize import fit_any

__all__ = ["bootstrap_draws", "param_intervals", "prediction_interval", "predict_draws"]

_SHARED: dict[str, Any] = {}
_MIN_PARALLEL = 24
REFIT_TOL = 1e-6
"""Relative tolerances of a bootstrap refit (trust-region steps, no L-BFGS-B polish): far below the
spread of the draws, and a third fewer iterations than the full fit's 1e-8."""


def _usable_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _refit(task: tuple[np.ndarray, dict[str, float]]) -> dict[str, float] | None:
    indices, fixed = task
    law: Law = _SHARED["law"]
    sample = _SHARED["points"].subset(indices)
    try:
        opt = fit_any(law, sample, huber_delta=_SHARED["delta"], n_starts=1, max_grid=1, seed=0,
                       starts=[_SHARED["start"]], method=_SHARED["method"], fixed=fixed or None,
                       tol=REFIT_TOL, polish=False)
    except Exception:  # noqa: BLE001 - a degenerate resample is dropped, not fatal
        return None
    return opt.params if np.all(np.isfinite(list(opt.params.values()))) else None


def _refit_chunk(chunk: Sequence[tuple[np.ndarray, dict[str, float]]]) -> list[dict[str, float] | None]:
    return [_refit(ix) for ix in chunk]


def _clusters(points: Points) -> list[np.ndarray] | None:
    """Index arrays of the points of each run when points are checkpoints of fewer runs (else None)."""
    if not points.checkpoint_of or len(set(points.checkpoint_of)) == points.n:
        return None
    groups: dict[str, list[int]] = {}
    for i, run in enumerate(points.checkpoint_of):
        groups.setdefault(run, []).append(i)
    return [np.asarray(v, dtype=int) for v in groups.values()]


def bootstrap_draws(points: Points, law: Law, params: Mapping[str, float], *, n_bootstrap: int, seed: int = 0,
                    huber_delta: float | None = None, n_jobs: int | None = None,
                    method: str = "trf", fixed: Mapping[str, float] | None = None,
                    priors: Mapping[str, tuple[float, float]] | None = None) -> list[dict[str, float]]:
    """``n_bootstrap`` parameter dicts refitted on runs resampled with replacement (a run's checkpoints
    together, when the points are checkpoints: ``Points.checkpoint_of``).

    ``fixed`` parameters stay at their values, except those in ``priors``, which each
    replicate draws uniformly from ``(low, high)`` (seeded) and holds during its refit.

    Resamples in which an input collapses to a single level are redrawn (up to 20
    times); refits that fail are dropped, so the list can be slightly shorter.
    """
    rng = np.random.default_rng(seed)
    n = points.n
    X = points.X()
    varying = [inp.name for inp in law.inputs if inp.kind != "metric" and np.unique(X[inp.name]).size > 1]
    clusters = _clusters(points)
    samples = []
    for _ in range(n_bootstrap):
        for _attempt in range(20):
            if clusters is None:
                ix = rng.integers(0, n, size=n)
            else:  # checkpoints of one run move together: resample runs
                ix = np.concatenate([clusters[j] for j in rng.integers(0, len(clusters), size=len(clusters))])
            if all(np.unique(X[a][ix]).size > 1 for a in varying):
                break
        held = dict(fixed or {})
        for name, (lo, hi) in (priors or {}).items():
            held[name] = float(rng.uniform(lo, hi))
        samples.append((ix, held))
    _SHARED.update(law=law, points=points, delta=huber_delta, start=dict(params), method=method)
    try:
        jobs = n_jobs or _usable_cores()
        jobs = max(1, min(jobs, n_bootstrap // 8))  # at least 8 refits per worker
        methods = mp.get_all_start_methods()
        if jobs <= 1 or n_bootstrap < _MIN_PARALLEL or "fork" not in methods:
            out = _refit_chunk(samples)
        else:
            chunks = [samples[i::jobs * 4] for i in range(jobs * 4)]
            with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("fork")) as pool:
                parts = list(pool.map(_refit_chunk, chunks))
            # undo the round-robin chunking so draw i belongs to sample i
            out = [None] * n_bootstrap
            for c, part in enumerate(parts):
                for j, d in enumerate(part):
                    out[c + j * jobs * 4] = d
    finally:
        _SHARED.clear()
    return [d for d in out if d is not None]


def param_intervals(params: Mapping[str, float], draws: Sequence[Mapping[str, float]],
                    level: float = 0.95) -> dict[str, ParamInterval]:
    """Percentile intervals of each parameter over the bootstrap draws."""
    if not draws:
        return {}
    q = (1 - level) / 2
    out = {}
    for name, est in params.items():
        v = np.array([d[name] for d in draws], dtype=float)
        out[name] = ParamInterval(estimate=float(est), lo=float(np.quantile(v, q)), hi=float(np.quantile(v, 1 - q)),
                                  se=float(v.std(ddof=1)) if v.size > 1 else 0.0, level=level)
    return out


def predict_draws(fit: FitResult, law: Law, X: Mapping[str, Any]) -> np.ndarray:
    """Predictions of every bootstrap draw (``params`` alone without draws), shape ``(B, n)``."""
    return np.stack([np.atleast_1d(law.predict(d, X)) for d in fit.draws()])


def prediction_interval(fit: FitResult, law: Law, X: Mapping[str, Any], *, level: float = 0.90,
                        seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point prediction and a ``level`` prediction interval for new runs at ``X``.

    Returns ``(predicted, lo, hi)``. Each bootstrap draw's prediction gets a noise draw
    ``N(0, s^2)`` with ``s`` the fit's residual SD (log units for ``log``
    residuals: the noise multiplies; metric units otherwise); the bounds are percentiles of the result. Parameter uncertainty
    and run-to-run noise both count. Without bootstrap draws only the noise counts.
    """
    pred = np.atleast_1d(law.predict(fit.params, X))
    draws = predict_draws(fit, law, X)
    rng = np.random.default_rng(seed)
    reps = max(1, 2000 // draws.shape[0])
    sims = np.repeat(draws, reps, axis=0)
    noise = rng.normal(0.0, fit.residual_sd, size=sims.shape)
    if fit.residual_scale == "log":
        sims = np.maximum(sims, 1e-300) * np.exp(noise)
    else:
        sims = sims + noise
    q = (1 - level) / 2
    return pred, np.quantile(sims, q, axis=0), np.quantile(sims, 1 - q, axis=0)
