"""The optimiser: minimise a law's Huber objective from a grid of starts, keep the best.

The objective is Chinchilla's Approach 3 as the Epoch AI replication ran it
(Besiroglu et al. 2024, arXiv 2404.10102): the mean Huber loss of the residuals
(log residuals ``log y - log f`` for a loss, raw residuals ``y - f`` for a score,
or the residual scale a law names, see :func:`residuals`), minimised over the named
parameters, amplitudes in log space. Every start of the law's grid is scored in one
vectorised pass; the minimiser runs from the ``n_starts`` best and the best optimum is
polished by L-BFGS-B from where it ended.

This module sits under :mod:`fit.bootstrap`, :mod:`fit.holdout` and :mod:`fit.fitting`
(all three call it; it calls none of them), so fit/ has no import cycle.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares, minimize

from fit.errors import FitInputError
from fit.laws import Law
from fit.models import Points

__all__ = ["fit_params", "fit_any", "OptimumInfo", "huber", "residuals", "scale_of", "residual_weights"]

_EPS = 1e-300


def huber(r: np.ndarray, delta: float) -> np.ndarray:
    """Huber loss ``r^2 / 2`` for ``|r| <= delta``, ``delta (|r| - delta / 2)`` beyond."""
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def scale_of(law: Law) -> str:
    """The law's residual scale: its own, else ``log`` for a loss and ``raw`` for a score."""
    return law.residual_scale or ("log" if law.target == "loss" else "raw")


def residuals(law: Law, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """Residuals on the law's scale (:func:`scale_of`).

    ``log``: ``log y - log pred`` (``pred <= 0`` gives a huge residual); ``relative``:
    ``(y - pred) / law.residual_unit``; ``raw``: ``y - pred``.
    """
    scale = scale_of(law)
    if scale == "log":
        return np.log(y) - np.log(np.maximum(pred, _EPS))
    if scale == "relative":
        return (y - pred) / law.residual_unit
    return y - pred


def residual_weights(stderr: np.ndarray | None, n: int) -> np.ndarray:
    """Residual multipliers ``median(se) / se_i`` from per-point standard errors (ones without them): a run
    measured twice as precisely counts twice as much, and a typical run keeps the Huber threshold's scale."""
    if stderr is None or len(stderr) == 0:
        return np.ones(n)
    se = np.asarray(stderr, dtype=float)
    return float(np.median(se)) / se


@dataclass(frozen=True)
class OptimumInfo:
    """The outcome of one minimisation (internal to fit/, but returned by :func:`fit_params`)."""

    params: dict[str, float]
    objective: float
    converged: bool
    message: str
    at_bounds: tuple[str, ...]
    n_starts: int


class _Problem:
    """Vector <-> named parameters, bounds and the vectorised objective for one law and data set."""

    def __init__(self, law: Law, X: Mapping[str, np.ndarray], y: np.ndarray, delta: float,
                 fixed: Mapping[str, float] | None = None, weights: np.ndarray | None = None):
        self.law, self.X, self.y, self.delta = law, X, y, delta
        self.w = residual_weights(weights, y.shape[0])
        self.fixed = dict(fixed or {})
        self.names = tuple(p for p in law.param_names if p not in self.fixed)
        self.is_log = np.array([p in law.log_params for p in self.names])
        lo = np.array([law.bounds[p][0] for p in self.names], dtype=float)
        hi = np.array([law.bounds[p][1] for p in self.names], dtype=float)
        self.lo = np.array([math.log(v) if g else v for v, g in zip(lo, self.is_log)])
        self.hi = np.array([math.log(v) if g else v for v, g in zip(hi, self.is_log)])

    def to_theta(self, params: Mapping[str, float]) -> np.ndarray:
        v = np.array([float(params[p]) for p in self.names])
        return np.clip(np.where(self.is_log, np.log(np.maximum(v, _EPS)), v), self.lo, self.hi)

    def to_params(self, theta: np.ndarray) -> dict[str, float]:
        v = np.where(self.is_log, np.exp(theta), theta)
        out = {p: float(x) for p, x in zip(self.names, v)}
        return {p: out[p] if p in out else float(self.fixed[p]) for p in self.law.param_names}

    def objective_batch(self, thetas: np.ndarray) -> np.ndarray:
        """Mean Huber loss divided by delta, for each row of ``thetas`` (shape ``(B, k)``)."""
        vals = np.where(self.is_log, np.exp(thetas), thetas)
        params = {p: vals[:, i:i + 1] for i, p in enumerate(self.names)}
        params.update(self.fixed)
        with np.errstate(all="ignore"):
            pred = np.asarray(self.law.fn(params, self.X), dtype=float)
            if pred.ndim == 1:
                pred = np.broadcast_to(pred, (thetas.shape[0], self.y.shape[0]))
            r = residuals(self.law, self.y, pred) * self.w
            obj = huber(r, self.delta).mean(axis=1) / self.delta
        return np.where(np.isfinite(obj), obj, np.inf)

    def _batch_pred(self, thetas: np.ndarray) -> np.ndarray:
        vals = np.where(self.is_log, np.exp(thetas), thetas)
        params = {p: vals[:, i:i + 1] for i, p in enumerate(self.names)}
        params.update(self.fixed)
        with np.errstate(all="ignore"):
            pred = np.asarray(self.law.fn(params, self.X), dtype=float)
        return np.broadcast_to(pred, (thetas.shape[0], self.y.shape[0]))

    def _steps(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = theta.shape[0]
        h = 1e-7 * np.maximum(1.0, np.abs(theta))
        h = np.where(theta + h <= self.hi, h, -h)
        batch = np.repeat(theta[None, :], k + 1, axis=0)
        batch[np.arange(1, k + 1), np.arange(k)] += h
        return batch, h

    def resid(self, theta: np.ndarray) -> np.ndarray:
        """Residuals at ``theta`` (non-finite ones replaced by a large value)."""
        r = residuals(self.law, self.y, self._batch_pred(theta[None, :])[0]) * self.w
        return np.where(np.isfinite(r), r, 1e6)

    def resid_jac(self, theta: np.ndarray) -> np.ndarray:
        """Forward-difference Jacobian of the residuals, shape ``(n, k)``, from one batched evaluation."""
        batch, h = self._steps(theta)
        r = residuals(self.law, self.y, self._batch_pred(batch)) * self.w
        jac = ((r[1:] - r[0]) / h[:, None]).T
        return np.where(np.isfinite(jac), jac, 0.0)

    def fun_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Objective and its forward-difference gradient, from one batched evaluation."""
        k = theta.shape[0]
        batch, h = self._steps(theta)
        vals = self.objective_batch(batch)
        f0 = vals[0]
        if not np.isfinite(f0):
            return 1e30, np.zeros(k)
        grad = (vals[1:] - f0) / h
        grad = np.where(np.isfinite(grad), grad, 0.0)
        return float(f0), grad


def _grid(law: Law, max_grid: int, seed: int, names: tuple[str, ...] | None = None) -> list[dict[str, float]]:
    """The law's full starting grid (over ``names``), or ``max_grid`` seeded draws from it when it is larger."""
    names = law.param_names if names is None else names
    values = [law.start_grid[p] for p in names]
    total = math.prod(len(v) for v in values)
    if total <= max_grid:
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]
    rng = np.random.default_rng(seed)
    picks = np.stack([rng.integers(0, len(v), size=max_grid) for v in values], axis=1)
    picks = np.unique(picks, axis=0)
    return [{p: values[j][row[j]] for j, p in enumerate(names)} for row in picks]


def _trf(prob: _Problem, theta0: np.ndarray, maxiter: int, tol: float = 1e-8):
    """Trust-region reflective least squares with scipy's ``huber`` loss: the same objective
    (``0.5 f^2 rho((r / f)^2)`` with ``f = delta`` equals ``H_delta(r)``), Gauss-Newton steps."""
    res = least_squares(prob.resid, np.clip(theta0, prob.lo, prob.hi), jac=prob.resid_jac, bounds=(prob.lo, prob.hi),
                        loss="huber", f_scale=prob.delta, method="trf", x_scale="jac", max_nfev=maxiter,
                        ftol=tol, xtol=tol, gtol=tol)
    fun = float(prob.objective_batch(res.x[None, :])[0])
    return _Res(x=res.x, fun=fun, success=res.status > 0, message=str(res.message), nit=int(res.nfev))


@dataclass
class _Res:
    x: np.ndarray
    fun: float
    success: bool
    message: str
    nit: int


def _minimise(prob: _Problem, starts: list[np.ndarray], maxiter: int, method: str = "trf", tol: float = 1e-8,
              do_polish: bool = True) -> OptimumInfo:
    bounds = list(zip(prob.lo, prob.hi))
    options = {"maxiter": maxiter, "ftol": 1e-13, "gtol": 1e-10, "maxcor": 20}
    best = None
    for theta0 in starts:
        if method == "trf":
            res = _trf(prob, theta0, maxiter, tol)
        else:
            res = minimize(prob.fun_and_grad, theta0, jac=True, method="L-BFGS-B", bounds=bounds, options=options)
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None  # noqa: S101 - starts is never empty (internal invariant)
    if not do_polish:
        polish = best
    else:
        polish = minimize(prob.fun_and_grad, best.x, jac=True, method="L-BFGS-B", bounds=bounds,
                          options={**options, "maxiter": min(300, maxiter)})
    final = polish if polish.fun <= best.fun else best
    stalled = abs(best.fun - polish.fun) <= 1e-7 * (1.0 + abs(best.fun))
    converged = bool(np.isfinite(final.fun) and final.fun < 1e29 and (polish.success or stalled))
    span = prob.hi - prob.lo
    near = (np.abs(final.x - prob.lo) <= 1e-6 * span) | (np.abs(prob.hi - final.x) <= 1e-6 * span)
    at_bounds = tuple(p for p, b in zip(prob.names, near) if b)
    msg = str(polish.message) if polish.fun < best.fun else str(best.message)
    if not converged:
        msg = (f"the minimiser did not converge ({msg}; {polish.nit} iterations, objective {final.fun:.6g}, "
               f"change on polishing {best.fun - polish.fun:.3g})")
    return OptimumInfo(params=prob.to_params(final.x), objective=float(final.fun * prob.delta), converged=converged,
                       message=msg, at_bounds=at_bounds, n_starts=len(starts))



def fit_params(law: Law, X: Mapping[str, np.ndarray], y: np.ndarray, *, huber_delta: float | None = None,
               n_starts: int = 8, max_grid: int = 8192, maxiter: int = 2000, seed: int = 0,
               starts: list[Mapping[str, float]] | None = None, method: str = "trf",
               fixed: Mapping[str, float] | None = None, tol: float = 1e-8,
               polish: bool = True, weights: np.ndarray | None = None) -> OptimumInfo:
    """Minimise the Huber objective of one (single-stage) law; no validation, no uncertainty.

    ``starts`` replaces the grid (bootstrap refits start from the full-data optimum).
    ``method``: ``trf`` runs trust-region reflective least squares with scipy's Huber loss
    (the same objective, Gauss-Newton steps: tens of iterations where L-BFGS-B takes hundreds
    on many-axis laws) from each start, then polishes the best with L-BFGS-B; ``lbfgsb`` runs
    L-BFGS-B from each start (exactly the Epoch AI procedure). ``fixed`` holds parameters at
    given values (they are not fitted). ``weights``: per-point standard errors (:func:`residual_weights`).
    """
    if method not in ("trf", "lbfgsb"):
        raise FitInputError(f"method must be 'trf' or 'lbfgsb', got {method!r}")
    delta = law.huber_delta if huber_delta is None else huber_delta
    prob = _Problem(law, X, y, delta, fixed, weights)
    if starts is not None:
        thetas = [prob.to_theta(s) for s in starts]
    else:
        grid = _grid(law, max_grid, seed, prob.names)
        cand = np.stack([prob.to_theta(g) for g in grid])
        scores = np.concatenate([prob.objective_batch(cand[i:i + 512]) for i in range(0, len(cand), 512)])
        order = np.argsort(scores, kind="stable")
        thetas = [cand[i] for i in order[:max(1, n_starts)]]
    return _minimise(prob, thetas, maxiter, method, tol, do_polish=polish)


def fit_any(law: Law, points: Points, *, huber_delta: float | None, n_starts: int, max_grid: int,
             seed: int, starts: list[Mapping[str, float]] | None = None, method: str = "trf",
             fixed: Mapping[str, float] | None = None, maxiter: int = 2000, tol: float = 1e-8,
             polish: bool = True) -> OptimumInfo:
    """Fit a law (chaining the stages of a two-step law, each on its own observed data).

    Two-step laws (OLMo model ladder): stage 1 (intermediate loss from N and D) is fitted on
    the runs' final checkpoints only (``points.final``); stage 2 (score from the observed
    loss) on every checkpoint, which widens the loss range it sees, plus ``law.ideal_point`` when set.
    ``fixed`` parameters are held in whichever stage has them (e.g. the accuracy floor ``lo``).
    """
    X = points.X()
    y = points.y_array()
    w = np.asarray(points.weights, dtype=float) if points.weights else None
    if law.stages is None:
        return fit_params(law, X, y, huber_delta=huber_delta, n_starts=n_starts, max_grid=max_grid, seed=seed,
                          starts=starts, method=method, fixed=fixed, maxiter=maxiter, tol=tol, polish=polish,
                          weights=w)
    stage1, stage2, inter = law.stages
    fixed = dict(fixed or {})
    unknown = [k for k in fixed if k not in law.param_names]
    if unknown:
        raise FitInputError(f"law {law.name!r} has no parameter {unknown[0]!r} to hold fixed")
    final = np.asarray(points.final, dtype=bool) if points.final else np.ones(points.n, dtype=bool)
    X1 = {k: v[final] for k, v in X.items()}
    s1 = fit_params(stage1, X1, X1[inter], n_starts=n_starts, max_grid=max_grid, seed=seed, method=method,
                    maxiter=maxiter, fixed={k: v for k, v in fixed.items() if k in stage1.param_names} or None,
                    starts=None if starts is None else [{k: s[k] for k in stage1.param_names} for s in starts])
    X2, y2, w2 = {inter: X[inter]}, y, w
    if law.ideal_point is not None:  # the OLMo ladder's ideal point: one more stage-2 point, weight 1
        X2, y2 = {inter: np.append(X[inter], law.ideal_point[0])}, np.append(y, law.ideal_point[1])
        w2 = None if w is None else np.append(w, 1.0)
    s2 = fit_params(stage2, X2, y2, huber_delta=law.huber_delta if huber_delta is None else huber_delta, n_starts=n_starts, max_grid=max_grid, seed=seed,
                    method=method, maxiter=maxiter, weights=w2,
                    fixed={k: v for k, v in fixed.items() if k in stage2.param_names} or None,
                    starts=None if starts is None else [{k: s[k] for k in stage2.param_names} for s in starts])
    pred = law.predict({**s1.params, **s2.params}, X)
    delta = law.huber_delta if huber_delta is None else huber_delta
    return OptimumInfo(params={**s1.params, **s2.params},
                       objective=float(huber(residuals(law, y, pred), delta).mean()),
                       converged=s1.converged and s2.converged,
                       message=f"stage 1 ({stage1.name}): {s1.message}; stage 2 ({stage2.name}): {s2.message}",
                       at_bounds=s1.at_bounds + s2.at_bounds, n_starts=s1.n_starts + s2.n_starts)

