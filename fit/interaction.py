"""The interaction test: does quality add its own gains, or scale what diversity buys?

The research plan (seed 003) states two hypotheses about the quality axes:

- ``additive``: ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)`` (quality and diversity fix
  different failure modes);
- ``multiplicative``: ``S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))`` (low groundedness
  discounts what diversity buys).

Both have the same number of parameters, so AIC and BIC rank them by likelihood.
The ``interaction`` law ``... + G + Q + kappa G Q`` nests ``additive`` at ``kappa = 0``:
a likelihood-ratio test (1 df) and, with the exponents fixed at the additive fit, a
linear F test in statsmodels (``compare_f_test``) test the interaction term. The effect
size is the ratio of the diversity gain at the highest design quality to the gain at
the lowest, ``R = 1 + kappa Q(q_max)`` (1 under the additive hypothesis), with a
bootstrap interval.
"""

from __future__ import annotations

import math

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law, get_law, normalise
from fit.models import FitResult, HypothesisFit, InteractionResult, Points

__all__ = ["compare_hypotheses", "gain_ratio"]


def gain_ratio(law: Law, params: dict[str, float]) -> float:
    """Diversity gain at ``w = 1`` on every quality axis / gain at ``w = 0``, for the three hypothesis laws."""
    qual = [i for i in law.inputs if i.kind == "quality"]
    q_max = sum(params[f"H_{q.name}"] * (1.0 - 2.0 ** (-params[f"beta_{q.name}"])) for q in qual)
    if law.name == "additive":
        return 1.0
    if law.name == "multiplicative":
        return 1.0 + q_max
    if law.name == "interaction":
        return 1.0 + params["kappa"] * q_max
    raise FitInputError(f"gain_ratio is defined for additive, multiplicative and interaction laws, not {law.name!r}")


def _hyp(fit: FitResult, law: Law, points: Points) -> HypothesisFit:
    from fit.fitting import residuals

    r = residuals(law, points.y_array(), law.predict(fit.params, points.X()))
    return HypothesisFit(law=law.name, params=fit.params, n_params=fit.n_params, rss=float((r * r).sum()),
                         aic=fit.aic, bic=fit.bic, heldout_mae=fit.heldout.mae if fit.heldout else None,
                         converged=fit.converged)


def _linear_f_test(additive: Law, p: dict[str, float], points: Points) -> tuple[float, float, float]:
    """statsmodels F test of the ``G(x) Q(q)`` feature with the additive fit's exponents held fixed."""
    import statsmodels.api as sm

    X = points.X()
    y = points.y_array()
    cols = []
    size = next(i for i in additive.inputs if i.kind == "size")
    cols.append(normalise(size, X[size.name]) ** (-p["alpha_N"]))
    gain = np.zeros_like(y)
    qual = np.zeros_like(y)
    for inp in additive.inputs:
        if inp.kind == "diversity":
            g = 1.0 - normalise(inp, X[inp.name]) ** (-p[f"alpha_{inp.name}"])
            cols.append(g)
            gain += p[f"G_{inp.name}"] * g
        elif inp.kind == "quality":
            h = 1.0 - (1.0 + normalise(inp, X[inp.name])) ** (-p[f"beta_{inp.name}"])
            cols.append(h)
            qual += p[f"H_{inp.name}"] * h
    base = sm.add_constant(np.column_stack(cols), has_constant="add")
    full = np.column_stack([base, gain * qual])
    restricted = sm.OLS(y, base).fit()
    unrestricted = sm.OLS(y, full).fit()
    f_stat, f_p, _ = unrestricted.compare_f_test(restricted)
    return float(f_stat), float(f_p), float(unrestricted.params[-1])


def compare_hypotheses(points: Points, inputs, *, n_bootstrap: int = 0, seed: int = 0, n_starts: int = 8,
                       max_grid: int = 4096, huber_delta: float | None = None,
                       n_jobs: int | None = None) -> InteractionResult:
    """Fit ``additive``, ``multiplicative`` and ``interaction`` and say which hypothesis the data supports.

    Parameters
    ----------
    points : score points (held-out points are predicted, not fitted).
    inputs : the experiment's law inputs (e.g. ``law_for_runs("additive", runs, config).inputs``);
        at least one diversity and one quality axis.
    n_bootstrap : bootstrap refits of the ``interaction`` law for the effect-size interval.

    Notes
    -----
    ``LR = 2 (ll_interaction - ll_additive)``, ``p = P(chi2_1 > LR)``. The verdict is the
    lower-BIC hypothesis; it is ``strong`` when ``delta BIC > 6`` and the LR test agrees
    (``p < 0.05`` for multiplicative, ``p >= 0.05`` for additive).
    """
    from scipy.stats import chi2

    from fit.fitting import fit_law

    laws = {name: get_law(name, inputs) for name in ("additive", "multiplicative", "interaction")}
    fits = {}
    for name, law in laws.items():
        fits[name] = fit_law(points, law, n_starts=n_starts, max_grid=max_grid, seed=seed, huber_delta=huber_delta,
                             n_bootstrap=n_bootstrap if name == "interaction" else 0, n_jobs=n_jobs)
    train = points.subset(points.split_array() == "fit")
    hyp = {name: _hyp(fits[name], laws[name], train) for name in laws}
    add, mul, inter = hyp["additive"], hyp["multiplicative"], hyp["interaction"]
    n = train.n
    ll = {k: -0.5 * n * (math.log(2 * math.pi * max(h.rss / n, 1e-300)) + 1.0) for k, h in hyp.items()}
    lr = max(0.0, 2.0 * (ll["interaction"] - ll["additive"]))
    lr_p = float(chi2.sf(lr, 1))
    f_stat, f_p, coef = _linear_f_test(laws["additive"], add.params, train)
    supported = "multiplicative" if mul.bic < add.bic else "additive"
    delta_bic = abs(mul.bic - add.bic)
    agrees = lr_p < 0.05 if supported == "multiplicative" else lr_p >= 0.05
    ratio = gain_ratio(laws["interaction"], inter.params)
    lo = hi = None
    if fits["interaction"].bootstrap:
        ratios = np.array([gain_ratio(laws["interaction"], d) for d in fits["interaction"].bootstrap])
        lo, hi = float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))
    return InteractionResult(fits=hyp, supported=supported, strength="strong" if delta_bic > 6 and agrees else "weak",
                             delta_bic=float(delta_bic), lr_stat=float(lr), lr_p=lr_p, f_stat=f_stat, f_p=f_p,
                             interaction_coef=coef, gain_ratio=float(ratio), gain_ratio_lo=lo, gain_ratio_hi=hi,
                             n_points=n)
