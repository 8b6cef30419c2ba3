"""Fitting a law to points: Huber loss, minimised from a grid of starts, keep the best.

The objective is Chinchilla's Approach 3 as the Epoch AI replication ran it
(Besiroglu et al. 2024, arXiv 2404.10102): the mean Huber loss of the residuals
(log residuals ``log y - log f`` for a loss, raw residuals ``y - f`` for a score),
minimised over the named parameters, amplitudes in log space. Every start of the
law's grid is scored in one vectorised pass; the minimiser runs from the ``n_starts``
best and the best optimum is polished by L-BFGS-B from where it ended.

The optimiser itself lives in :mod:`fit.optimize` (under this module, :mod:`fit.bootstrap`
and :mod:`fit.holdout`). The default minimiser is scipy's trust-region reflective least squares with its
``huber`` loss, which is the same objective (``0.5 f^2 rho(r^2 / f^2) = H_f(r)``)
minimised with Gauss-Newton steps; on the 15-parameter axis laws it needs tens of
iterations where L-BFGS-B needs hundreds. ``method="lbfgsb"`` runs L-BFGS-B from
every start instead (the replication's exact procedure); both land on the published
Chinchilla intervals (``tests/fit/test_chinchilla.py``).

:func:`fit_law` is the one entry point: it fits the ``fit`` points, and adds
bootstrap intervals (:mod:`fit.bootstrap`) and held-out metrics (:mod:`fit.holdout`)
when asked; it never reads or writes anything.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping

import numpy as np

from fit.bootstrap import bootstrap_draws, param_intervals
from fit.errors import FitError, FitInputError
from fit.holdout import heldout_metrics
from fit.laws import Law
from fit.models import FitResult, LackOfFit, Points
from fit.optimize import OptimumInfo, fit_any, fit_params, huber, residuals, scale_of

__all__ = ["fit_law", "fit_params", "OptimumInfo", "huber", "residuals", "check_points", "replicate_sd",
           "choose_residual_scale", "lack_of_fit"]


def check_points(points: Points, law: Law) -> None:
    """Raise :class:`FitInputError` for data the law cannot be fitted to (one line, naming the problem)."""
    needed = law.axes
    missing = [a for a in needed if a not in points.inputs]
    if missing:
        raise FitInputError(f"law {law.name!r} needs inputs {', '.join(needed)}; the points lack "
                            f"{', '.join(missing)} (have {', '.join(points.inputs) or 'none'})")
    y = points.y_array()
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        rid = points.run_ids[bad[0]] if points.run_ids else f"point {bad[0]}"
        raise FitInputError(f"{points.benchmark or 'target'}: non-finite value {y[bad[0]]} for {rid}; "
                            "every fitted value must be finite")
    if law.target == "loss" and np.any(y <= 0):
        i = int(np.flatnonzero(y <= 0)[0])
        rid = points.run_ids[i] if points.run_ids else f"point {i}"
        raise FitInputError(f"law {law.name!r} fits a positive loss; got {y[i]} for {rid}")
    if law.target == "score" and (np.any(y < 0.0) or np.any(y > 1.0)):
        i = int(np.flatnonzero((y < 0.0) | (y > 1.0))[0])
        rid = points.run_ids[i] if points.run_ids else f"point {i}"
        raise FitInputError(f"law {law.name!r} fits a score in [0, 1]; got {y[i]} for {rid} "
                            "(fit a loss with a loss law such as 'chinchilla')")
    for inp in law.inputs:
        x = np.asarray(points.inputs[inp.name], dtype=float)
        if not np.all(np.isfinite(x)):
            raise FitInputError(f"input {inp.name!r} has non-finite values; every run needs a finite level")
        if inp.kind in ("size", "tokens", "flops", "diversity") and np.any(x <= 0):
            raise FitInputError(f"input {inp.name!r} must be > 0 for a power law; got {x[x <= 0][0]}")
        if inp.kind == "size" and np.unique(x).size < 2:
            raise FitInputError(f"the fitted runs have a single model size ({inp.name} = {x[0]:g}): law {law.name!r} "
                                "cannot fit its size term, so held-out runs of other sizes cannot be predicted; "
                                "fit 2+ sizes (a ladder that leaves 2+ rungs in the fit split) or use --holdout none")
        if inp.kind != "metric" and np.unique(x).size < 2:
            hint = ("fit a law without D (e.g. --law saturating) or import runs at 2+ token counts" if
                    inp.kind == "tokens" else "vary it in the design or drop it from the law")
            raise FitInputError(f"axis {inp.name!r} has a single level ({x[0]:g}) in the fitted runs; "
                                f"a law cannot learn its effect ({hint})")
    if points.n < law.n_params + 1:
        raise FitInputError(f"law {law.name!r} has {law.n_params} parameters and needs at least "
                            f"{law.n_params + 1} fitted runs; got {points.n}")



SIZE_EXPONENT_FIXED = 0.5
"""Size exponent held fixed when the fitted runs have fewer than 3 model sizes."""
SIZE_EXPONENT_PRIOR = (0.2, 0.8)
"""Range the bootstrap draws that fixed exponent from (so intervals carry the uncertainty)."""


def _unidentified_size_exponent(law: Law, points: Points
                                ) -> tuple[dict[str, float], dict[str, tuple[float, float]], str]:
    """Fix a score law's size exponent when N takes fewer than 3 levels.

    ``S0 - A_N n^(-alpha_N)`` has three parameters; two model sizes give two equations,
    so every ``alpha_N`` fits equally well and the optimum is wherever the optimizer
    stopped. The exponent is then held at :data:`SIZE_EXPONENT_FIXED` and the bootstrap
    draws it from :data:`SIZE_EXPONENT_PRIOR`, so extrapolation intervals widen honestly.
    """
    if law.target != "score" or law.stages is not None:
        return {}, {}, ""
    size = next((i for i in law.inputs if i.kind == "size"), None)
    if size is None:
        return {}, {}, ""
    name = next((p for p in ("alpha_N", f"alpha_{size.name}") if p in law.param_names), None)
    levels = np.unique(np.asarray(points.inputs[size.name], dtype=float)).size
    if name is None or levels >= 3:
        return {}, {}, ""
    note = (f"{name} not identifiable from {levels} model sizes: fixed at {SIZE_EXPONENT_FIXED} and drawn from "
            f"U{SIZE_EXPONENT_PRIOR} in the bootstrap (fit 3+ sizes to estimate it)")
    return {name: SIZE_EXPONENT_FIXED}, {name: SIZE_EXPONENT_PRIOR}, note


SMALL_METRIC = 0.1
"""A positive score whose fitted values all lie below this (e.g. an error rate of 0.005-0.03) is fitted on
log residuals: its noise scales with its level, and raw residuals would weigh the largest values most."""
DELTA_SPREAD = 0.25
"""Default Huber threshold of a score law, as a fraction of the metric's SD over the fitted runs (on the
residual scale): robust to outlying runs without turning into least squares when the metric is small."""


def choose_residual_scale(law: Law, y: np.ndarray, huber_delta: float | None = None) -> Law:
    """The law with its residual scale, unit and Huber delta set for the fitted values ``y``.

    - a loss, a two-step law, or a law that names its scale: unchanged (``log`` for a loss, delta the law's);
    - a score with ``0 < y < SMALL_METRIC`` everywhere: ``log`` residuals,
      delta ``DELTA_SPREAD * SD(log y)``;
    - any other score: ``relative`` residuals ``(y - f) / SD(y)``, delta ``DELTA_SPREAD``.

    ``huber_delta`` (in the chosen residual units) overrides the default delta.
    """
    from dataclasses import replace

    if law.target == "loss" or law.stages is not None or law.residual_scale is not None or y.size < 2:
        return law if huber_delta is None else replace(law, huber_delta=huber_delta)
    if np.all(y > 0) and np.all(y < SMALL_METRIC):
        spread = float(np.std(np.log(y), ddof=1))
        return replace(law, residual_scale="log", residual_unit=1.0,
                       huber_delta=huber_delta or max(DELTA_SPREAD * spread, 1e-6))
    unit = float(np.std(y, ddof=1))
    if not unit > 0:
        return replace(law, residual_scale="raw", huber_delta=huber_delta or law.huber_delta)
    return replace(law, residual_scale="relative", residual_unit=unit, huber_delta=huber_delta or DELTA_SPREAD)


def _on_scale(law: Law, y: np.ndarray) -> np.ndarray:
    return np.log(y) if scale_of(law) == "log" else y


def _replicate_groups(points: Points, law: Law) -> tuple[float, int, int]:
    """Within-group sum of squares (residual scale), its degrees of freedom, and the number of groups."""
    if not points.groups:
        return 0.0, 0, 0
    y = _on_scale(law, points.y_array())
    groups: dict[str, list[float]] = {}
    for g, v in zip(points.groups, y):
        groups.setdefault(g, []).append(float(v))
    ss, dof = 0.0, 0
    for vals in groups.values():
        if len(vals) >= 2:
            a = np.asarray(vals)
            ss += float(((a - a.mean()) ** 2).sum())
            dof += len(vals) - 1
    return ss, dof, len(groups)


def lack_of_fit(points: Points, law: Law, rss: float, k: int, residual_sd: float) -> LackOfFit | None:
    """Residual SD against replicate SD, with the lack-of-fit F test where the design has replicates.

    ``SS_pure`` = within-group sum of squares (``df_pure = n - g``), ``SS_lack = RSS - SS_pure``
    (``df_lack = g - k``); ``F = (SS_lack / df_lack) / (SS_pure / df_pure)``. None without replicates.
    """
    from scipy.stats import f as f_dist

    ss_pure, df_pure, g = _replicate_groups(points, law)
    if df_pure == 0 or ss_pure <= 0:
        return None
    rep_sd = math.sqrt(ss_pure / df_pure)
    df_lack = g - k
    f_stat = p = None
    if df_lack > 0:
        f_stat = max(rss - ss_pure, 0.0) / df_lack / (ss_pure / df_pure)
        p = float(f_dist.sf(f_stat, df_lack, df_pure))
    return LackOfFit(residual_sd=residual_sd, replicate_sd=rep_sd, ratio=residual_sd / rep_sd, f_stat=f_stat,
                     df_lack=max(df_lack, 0), df_pure=df_pure, p_value=p, flagged=p is not None and p < 0.01)


def replicate_sd(points: Points, law: Law) -> float | None:
    """Pooled within-group SD of ``y`` on the law's residual scale over replicate groups of 2+ runs."""
    ss, dof, _ = _replicate_groups(points, law)
    return math.sqrt(ss / dof) if dof else None


def _ranges(points: Points) -> dict[str, tuple[float, float]]:
    """``input -> (min, max)`` over the points' finite values."""
    out = {}
    for name, col in points.inputs.items():
        x = np.asarray(col, dtype=float)
        x = x[np.isfinite(x)]
        if x.size:
            out[name] = (float(x.min()), float(x.max()))
    return out


def fit_law(points: Points, law: Law, *, huber_delta: float | None = None, n_starts: int = 8,
            max_grid: int = 8192, seed: int = 0, n_bootstrap: int = 0, n_jobs: int | None = None,
            interval_level: float = 0.90, holdout_rule: str = "", holdout_source: str = "",
            require_convergence: bool = False, method: str = "trf", maxiter: int = 2000,
            fixed: Mapping[str, float] | None = None) -> FitResult:
    """Fit ``law`` to the ``fit`` points; bootstrap and score the ``heldout`` points when asked.

    Parameters
    ----------
    points : the data; points whose split is ``heldout`` are never fitted, only predicted.
    law : a registered law (:func:`fit.laws.get_law`).
    huber_delta : Huber threshold in residual units (log units for a loss); default the law's
        (``1e-3`` for ``chinchilla`` as in the Epoch replication, ``0.05`` score points otherwise).
    n_starts : L-BFGS-B runs, from the best-scoring points of the starting grid.
    max_grid : largest starting grid scored; larger grids are subsampled (seeded).
    seed : seed of grid subsampling and of the bootstrap.
    n_bootstrap : bootstrap refits over runs (0: none). They give ``intervals`` (95%) and the
        prediction intervals of the held-out check.
    n_jobs : worker processes for the bootstrap (default: every core).
    interval_level : nominal level of held-out prediction intervals.
    holdout_rule, holdout_source : recorded as given (see :mod:`fit.holdout`).
    require_convergence : raise :class:`fit.errors.FitError` with diagnostics instead of
        returning a result with ``converged=False``.
    method : ``trf`` (default; Huber least squares by trust-region steps, polished by
        L-BFGS-B) or ``lbfgsb`` (L-BFGS-B from every start); see :func:`fit_params`.
    maxiter : iteration (function evaluation, for ``trf``) limit of each minimiser run.
    fixed : parameters held at given values (e.g. ``{"lo": 0.25}``, the chance-accuracy floor of a
        two-step law); they are in ``params`` and ``fixed`` of the result and are not bootstrapped.

    Returns
    -------
    FitResult
        Frozen; ``params`` by name, diagnostics, AIC/BIC, bootstrap draws and held-out metrics.

    Notes
    -----
    With residuals ``r_i`` the objective is ``(1/n) sum_i H_delta(r_i)``;
    ``ll = -n/2 (log(2 pi s^2) + 1)`` with ``s^2 = RSS / n``; ``AIC = 2k - 2 ll``;
    ``BIC = k ln n - 2 ll``.

    Examples
    --------
    >>> from fit.laws import get_law
    >>> from fit.models import Points
    >>> import numpy as np
    >>> N = np.repeat([1e8, 3e8, 1e9, 3e9], 4); D = np.tile([2e9, 6e9, 2e10, 6e10], 4)
    >>> L = 1.8 + 400 * N ** -0.34 + 2000 * D ** -0.36
    >>> fit = fit_law(Points(inputs={"N": list(N), "D": list(D)}, y=list(L), target="loss"), get_law("chinchilla"))
    >>> round(fit.params["alpha"], 2), round(fit.params["E"], 2)
    (0.34, 1.8)
    """
    if law.target != points.target and law.stages is None:
        raise FitInputError(f"law {law.name!r} fits a {law.target}, but the points hold a {points.target} "
                            f"({points.benchmark}/{points.metric})")
    split = points.split_array()
    final = np.asarray(points.final, dtype=bool) if points.final else np.ones(points.n, dtype=bool)
    train = points.subset(split == "fit")
    test = points.subset((split == "heldout") & final)  # a held-out run is judged by its final checkpoint
    check_points(train, law)
    law = choose_residual_scale(law, train.y_array(), huber_delta)
    huber_delta = None
    held, priors, note = _unidentified_size_exponent(law, train)
    unknown = [k for k in (fixed or {}) if k not in law.param_names]
    if unknown:
        raise FitInputError(f"law {law.name!r} has no parameter {unknown[0]!r} to hold fixed "
                            f"(parameters: {', '.join(law.param_names)})")
    fixed = {**held, **(fixed or {})}
    t0 = time.perf_counter()
    opt = fit_any(law, train, huber_delta=huber_delta, n_starts=n_starts, max_grid=max_grid, seed=seed,
                   method=method, fixed=fixed, maxiter=maxiter)
    if note:
        opt = OptimumInfo(params=opt.params, objective=opt.objective, converged=opt.converged,
                          message=f"{opt.message}; {note}", at_bounds=opt.at_bounds, n_starts=opt.n_starts)
    elapsed = time.perf_counter() - t0
    if require_convergence and not opt.converged:
        raise FitError(f"law {law.name!r} on {train.n} runs: {opt.message}; at bounds: "
                       f"{', '.join(opt.at_bounds) or 'none'}")
    X, y = train.X(), train.y_array()
    r = residuals(law, y, law.predict(opt.params, X)) * law.residual_unit  # log or metric units
    n, k = train.n, law.n_params - len(fixed)
    rss = float((r * r).sum())
    res_sd = math.sqrt(rss / max(n - k, 1))
    s2 = max(rss / n, 1e-300)
    ll = -0.5 * n * (math.log(2 * math.pi * s2) + 1.0)
    delta = law.huber_delta
    draws: list[dict[str, float]] = []
    if n_bootstrap > 0:
        draws = bootstrap_draws(train, law, opt.params, n_bootstrap=n_bootstrap, seed=seed, huber_delta=delta,
                                n_jobs=n_jobs, method=method, fixed=fixed, priors=priors)
    result = FitResult(
        law=law.name, inputs=list(law.inputs), params=opt.params, target=law.target, loss=opt.objective,
        converged=opt.converged, message=opt.message, at_bounds=list(opt.at_bounds), fixed=fixed, priors=priors,
        n_points=n, n_params=k,
        data_hash=train.data_hash(), huber_delta=delta, n_starts=opt.n_starts,
        residual_sd=res_sd, replicate_sd=replicate_sd(train, law), log_likelihood=ll,
        residual_scale=scale_of(law), residual_unit=law.residual_unit,
        lack_of_fit=lack_of_fit(train, law, rss, k, res_sd),
        aic=2 * k - 2 * ll, bic=k * math.log(n) - 2 * ll, bootstrap=draws,
        bootstrap_seed=seed if draws else None, intervals=param_intervals(opt.params, draws) if draws else {},
        holdout_rule=holdout_rule or ("none" if test.n == 0 else "split"),
        holdout_source=holdout_source or ("none" if test.n == 0 else "points' split"),
        experiment=points.experiment, benchmark=points.benchmark, metric=points.metric, simulated=points.simulated,
        fit_seconds=elapsed, n_skipped=points.n_skipped,
        max_fitted_flops=max(train.flops) if train.flops and all(math.isfinite(f) for f in train.flops) else None,
        fitted_ranges=_ranges(train), weighted=bool(train.weights))
    if test.n:
        result = result.model_copy(update={"heldout": heldout_metrics(
            result, law, test, train_flops=train.flops, level=interval_level, seed=seed)})
    return result
