"""The interaction test: does quality add its own gains, or scale what diversity buys?

The research plan (seed 003) states two hypotheses about the quality axes:

- ``additive``: ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)`` (quality and diversity fix
  different failure modes);
- ``multiplicative``: ``S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))`` (low groundedness
  discounts what diversity buys).

Both have the same number of parameters, so AIC and BIC rank them by likelihood.
The ``interaction`` law ``... + G + Q + kappa G Q`` nests ``additive`` at ``kappa = 0``:
a likelihood-ratio test, referred to its parametric bootstrap under the additive fit (the
chi-square reference is invalid with parameters at bounds), and, with the exponents fixed
at the additive fit, a linear F test in statsmodels (``compare_f_test``) test the
interaction term, whatever its sign. The effect
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

__all__ = ["compare_hypotheses", "gain_ratio", "lr_bootstrap"]


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
    from fit.optimize import residuals

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


def _rss(law: Law, params: dict[str, float], points: Points) -> float:
    from fit.optimize import residuals

    r = residuals(law, points.y_array(), law.predict(params, points.X()))
    return float(np.sum(r * r)) if np.all(np.isfinite(r)) else math.inf


def lr_bootstrap(train: Points, add_law: Law, add_fit: FitResult, int_law: Law, int_fit: FitResult, lr: float,
                 *, n_draws: int, seed: int = 0) -> tuple[float, int]:
    """P-value of the LR statistic against its parametric bootstrap under the additive fit.

    Each draw simulates the fitted runs from the additive fit (its prediction plus Gaussian
    noise of its residual SD, on its residual scale), refits ``additive`` and ``interaction``
    (warm starts; the interaction refit also starts from the additive optimum with
    ``kappa = 0``) and records ``LR* = n log(RSS*_add / RSS*_int)``. Returns
    ``((1 + #{LR* >= LR}) / (1 + B), B)`` with ``B`` the draws that refitted. Unlike the
    chi-square reference this stays valid when parameters sit at their bounds.
    """
    from fit.optimize import fit_any

    rng = np.random.default_rng(seed + 7919)
    X = train.X()
    base = add_law.predict(add_fit.params, X)
    n = train.n
    stats = []
    int_start_null = {**add_fit.params, "kappa": 0.0}
    for _ in range(n_draws):
        noise = rng.normal(0.0, add_fit.residual_sd, size=n)
        y = base * np.exp(noise) if add_fit.residual_scale == "log" else base + noise
        y = np.clip(y, 1e-6, 1.0 - 1e-6) if add_law.target == "score" else np.maximum(y, 1e-12)
        sim = train.model_copy(update={"y": [float(v) for v in y]})
        try:
            oa = fit_any(add_law, sim, huber_delta=None, n_starts=1, max_grid=1, seed=0, starts=[add_fit.params],
                         fixed=add_fit.fixed or None, tol=1e-6, polish=False)
            oi = fit_any(int_law, sim, huber_delta=None, n_starts=2, max_grid=1, seed=0,
                         starts=[int_fit.params, int_start_null], fixed=int_fit.fixed or None, tol=1e-6,
                         polish=False)
        except Exception:  # noqa: BLE001 - a degenerate simulated data set is dropped
            continue
        ra, ri = _rss(add_law, oa.params, sim), _rss(int_law, oi.params, sim)
        if math.isfinite(ra) and math.isfinite(ri) and ri > 0:
            stats.append(max(0.0, n * math.log(max(ra, ri) / ri)))
    b = len(stats)
    return float((1 + sum(st >= lr for st in stats)) / (1 + b)), b


def compare_hypotheses(points: Points, inputs, *, n_bootstrap: int = 0, seed: int = 0, n_starts: int = 8,
                       max_grid: int = 4096, huber_delta: float | None = None,
                       n_jobs: int | None = None) -> tuple[InteractionResult, dict[str, FitResult]]:
    """Fit ``additive``, ``multiplicative`` and ``interaction`` and say what the evidence supports.

    Parameters
    ----------
    points : score points (held-out points are predicted, not fitted).
    inputs : the experiment's law inputs (e.g. ``law_for_runs("additive", runs, config).inputs``);
        at least one diversity and one quality axis.
    n_bootstrap : bootstrap refits of each form (the effect-size interval, form-mixing intervals)
        and parametric-bootstrap draws of the LR statistic (0: chi-square reference, BIC verdict).

    Returns
    -------
    (InteractionResult, fits)
        The verdict and each form's :class:`FitResult` (``fits[result.supported]`` is what
        ``--law auto`` uses).

    Notes
    -----
    ``LR = 2 (ll_interaction - ll_additive)``; its p-value comes from
    :func:`lr_bootstrap` (the chi-square reference is invalid at bounds). The data reject
    additivity when the 95% interval of the gain ratio ``1 + kappa Q(q_max)`` excludes 1 or
    the bootstrap LR test gives ``p < 0.05`` (or the observed LR exceeds every draw, the
    smallest p that ``B`` draws can give), whatever the sign; the verdict then names the
    direction (``amplifies`` when the ratio exceeds 1, else ``discounts``) and the supported
    form is the lower-BIC one of ``multiplicative`` and ``interaction`` (only ``interaction``
    can discount). ``additive`` only when neither test can tell the forms apart.
    Without bootstrap: additivity is rejected when ``delta BIC > 2`` (positive evidence; strong beyond 6).
    """
    from scipy.stats import chi2

    from fit.fitting import fit_law
    from fit.laws import law_of

    laws = {name: get_law(name, inputs) for name in ("additive", "multiplicative", "interaction")}
    fits = {}
    for name, law in laws.items():
        fits[name] = fit_law(points, law, n_starts=n_starts, max_grid=max_grid, seed=seed, huber_delta=huber_delta,
                             n_bootstrap=n_bootstrap, n_jobs=n_jobs)
    train = points.subset(points.split_array() == "fit")
    hyp = {name: _hyp(fits[name], laws[name], train) for name in laws}
    add, mul, inter = hyp["additive"], hyp["multiplicative"], hyp["interaction"]
    n = train.n
    ll = {k: f.log_likelihood for k, f in fits.items()}
    lr = max(0.0, 2.0 * (ll["interaction"] - ll["additive"]))
    if n_bootstrap > 0:
        lr_p, b = lr_bootstrap(train, law_of(fits["additive"]), fits["additive"], law_of(fits["interaction"]),
                               fits["interaction"], lr, n_draws=n_bootstrap, seed=seed)
        method = f"parametric bootstrap ({b} draws)"
    else:
        lr_p, method = float(chi2.sf(lr, 1)), "chi-square (1 df; invalid with parameters at bounds)"
    f_stat, f_p, coef = _linear_f_test(laws["additive"], add.params, train)
    ratio = gain_ratio(laws["interaction"], inter.params)
    lo = hi = None
    if fits["interaction"].bootstrap:
        ratios = np.array([gain_ratio(laws["interaction"], d) for d in fits["interaction"].bootstrap])
        lo, hi = float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))
    delta_bic = float(add.bic - min(mul.bic, inter.bic))
    if n_bootstrap > 0:
        ci_rejects = lo is not None and (lo > 1.0 or hi < 1.0)
        lr_rejects = lr_p < 0.05 or (b > 0 and lr_p <= 1.0 / (1 + b))  # beyond every draw: the least p B can give
        reject = ci_rejects or lr_rejects
        strong = ci_rejects == lr_rejects
    else:
        reject = delta_bic > 2.0  # positive evidence (Kass and Raftery 1995); strong beyond 6
        strong = abs(delta_bic) > 6.0 and (lr_p < 0.05) == reject
    if not reject:
        supported, verdict = "additive", "additive"
    elif ratio >= 1.0:
        verdict = "amplifies"
        supported = "multiplicative" if mul.bic <= inter.bic else "interaction"
    else:
        supported, verdict = "interaction", "discounts"
    result = InteractionResult(fits=hyp, supported=supported, verdict=verdict,
                               strength="strong" if strong else "weak", delta_bic=delta_bic, lr_stat=float(lr),
                               lr_p=float(lr_p), lr_p_method=method, f_stat=f_stat, f_p=f_p, interaction_coef=coef,
                               gain_ratio=float(ratio), gain_ratio_lo=lo, gain_ratio_hi=hi, n_points=n)
    return result, fits
