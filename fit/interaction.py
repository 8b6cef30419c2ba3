"""The interaction test: does quality add its own gains, or scale what diversity buys?

The research plan (seed 003) states two hypotheses about the quality axes:

- ``additive``: ``S = S0 - A_N n^(-alpha_N) + G(x) + Q(q)`` (quality and diversity fix
  different failure modes);
- ``multiplicative``: ``S = S0 - A_N n^(-alpha_N) + G(x) (1 + Q(q))`` (low groundedness
  discounts what diversity buys).

Both have the same number of parameters, so AIC and BIC rank them by likelihood (reported).
The verdict comes from **one pre-declared test**: the ``interaction`` law ``... + G + Q + kappa G Q``
nests ``additive`` at ``kappa = 0``, and the likelihood-ratio statistic ``LR = n log(RSS_add / RSS_int)``
(the Gaussian profile likelihood) is referred to its bootstrap distribution under the additive fit
(:func:`lr_bootstrap`): a residual bootstrap (the additive fit's residuals resampled onto its
predictions, so the null does not assume Gaussian noise the Huber fit does not), where every draw is
fitted by exactly the procedure that gave the observed statistic (:func:`lr_statistic`: the same starts,
the grid-searched optima of the observed data, to the same tolerance). Additivity is rejected at ``p < 0.05`` and only then; the direction of a
rejection is named by the effect size, the ratio of the diversity gain at the highest design quality to
the gain at the lowest, ``R = 1 + kappa Q(q_max)`` (1 under the additive hypothesis), with a bootstrap
interval that is reported but decides nothing. The linear F test (exponents fixed at the additive fit,
statsmodels ``compare_f_test``) is reported too. Its size on additive truths is measured in
``benchmarks/interaction_size.py``.
"""

from __future__ import annotations

import math

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law, get_law, normalise
from fit.models import FitResult, HypothesisFit, InteractionResult, Points

__all__ = ["compare_hypotheses", "gain_ratio", "lr_bootstrap", "lr_statistic", "ALPHA", "MIN_LR_DRAWS"]

ALPHA = 0.05
"""Size of the pre-declared LR test of additivity."""
MIN_LR_DRAWS = 39
"""Fewest bootstrap draws of the LR statistic: with 39 a rejection at 5% is an observed statistic in the top 2 of
40, an exact-size Monte Carlo test (fewer than 19 could never reject at all). The draws refit from warm starts
(about a tenth of a second each), so they are cheap beside the forms' own bootstrap refits."""


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


def lr_statistic(train: Points, add_law: Law, int_law: Law, *, starts_add: list[dict[str, float]],
                 starts_int: list[dict[str, float]], huber_delta: float | None = None,
                 fixed: dict[str, float] | None = None) -> tuple[float, dict[str, float], dict[str, float]]:
    """``(LR, additive optimum, interaction optimum)`` on ``train``, ``LR = n log(RSS_add / RSS_int)``.

    The additive form is fitted from ``starts_add``; the interaction form from ``starts_int`` and from the
    additive optimum with ``kappa = 0`` (so the nested form never fits worse), each to full convergence
    (tolerance and polish of :func:`fit.optimize.fit_any`). The one procedure for the observed data and
    every bootstrap draw, with the same starts: equal optimiser effort under the null. ``LR = inf`` when a
    fit fails.
    """
    from fit.optimize import fit_any

    kw = dict(huber_delta=huber_delta, n_starts=1, max_grid=1, seed=0, fixed=fixed or None)
    oa = fit_any(add_law, train, starts=list(starts_add), **kw)
    oi = fit_any(int_law, train, starts=[*starts_int, {**oa.params, "kappa": 0.0}], **kw)
    ra, ri = _rss(add_law, oa.params, train), _rss(int_law, oi.params, train)
    if not (math.isfinite(ra) and math.isfinite(ri)) or ri <= 0:
        return math.inf, oa.params, oi.params
    return max(0.0, train.n * math.log(max(ra, ri) / ri)), oa.params, oi.params


def _null_draw(law: Law, base: np.ndarray, resid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One data set under the additive fit: its centred residuals resampled onto its predictions."""
    from fit.optimize import scale_of

    e = rng.choice(resid - resid.mean(), size=base.size, replace=True)
    scale = scale_of(law)
    if scale == "log":
        y = base * np.exp(e)
    elif scale == "relative":
        y = base + e * law.residual_unit
    else:
        y = base + e
    return np.clip(y, 1e-6, 1.0 - 1e-6) if law.target == "score" else np.maximum(y, 1e-12)


def lr_bootstrap(train: Points, add_law: Law, add_params: dict[str, float], int_law: Law, lr: float, *,
                 n_draws: int, starts_add: list[dict[str, float]], starts_int: list[dict[str, float]], seed: int = 0,
                 huber_delta: float | None = None, fixed: dict[str, float] | None = None) -> tuple[float, int]:
    """P-value of the LR statistic against its residual bootstrap under the additive fit ``add_params``.

    Each draw resamples the additive fit's centred residuals onto its predictions (on its residual scale)
    and recomputes :func:`lr_statistic` with the very starts the observed statistic used. Returns
    ``((1 + #{LR* >= LR}) / (1 + B), B)`` with ``B`` the draws that refitted (a Monte Carlo test, exact
    in size when ``alpha (B + 1)`` is an integer). Unlike the chi-square reference this stays valid when
    parameters sit at their bounds.
    """
    from fit.optimize import residuals

    rng = np.random.default_rng(seed + 7919)
    base = add_law.predict(add_params, train.X())
    resid = residuals(add_law, train.y_array(), base)
    stats = []
    for _ in range(n_draws):
        sim = train.model_copy(update={"y": [float(v) for v in _null_draw(add_law, base, resid, rng)]})
        try:
            st, _, _ = lr_statistic(sim, add_law, int_law, starts_add=starts_add, starts_int=starts_int,
                                    huber_delta=huber_delta, fixed=fixed)
        except Exception:  # noqa: BLE001 - a degenerate simulated data set is dropped
            continue
        if math.isfinite(st):
            stats.append(st)
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
        and residual-bootstrap draws of the LR statistic, at least :data:`MIN_LR_DRAWS` (0: the chi-square
        reference, 1 df).

    Returns
    -------
    (InteractionResult, fits)
        The verdict and each form's :class:`FitResult` (``fits[result.supported]`` is what
        ``--law auto`` uses).

    Notes
    -----
    One pre-declared test decides (module docstring): additivity is rejected when the LR test's
    Monte Carlo p-value ``(1 + #{LR* >= LR}) / (1 + B)`` is at most :data:`ALPHA` (an exact-size test
    when ``ALPHA (B + 1)`` is an integer). Only then is the direction named (``amplifies`` when the gain
    ratio exceeds 1, else ``discounts``) and the supported form is the lower-BIC one of
    ``multiplicative`` and ``interaction`` (only ``interaction`` can discount). ``strength`` is
    ``strong`` when a rejection also has a BIC gap above 6 (Kass and Raftery 1995), ``weak`` for other
    rejections and ``none`` when additivity stands (absence of evidence is not strong evidence).
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
    add_law, int_law = law_of(fits["additive"]), law_of(fits["interaction"])
    effort = dict(starts_add=[fits["additive"].params], starts_int=[fits["interaction"].params],
                  huber_delta=huber_delta, fixed=fits["additive"].fixed or None)
    lr, add_params, _ = lr_statistic(train, add_law, int_law, **effort)
    if n_bootstrap > 0:
        lr_p, b = lr_bootstrap(train, add_law, add_params, int_law, lr, n_draws=max(n_bootstrap, MIN_LR_DRAWS),
                               seed=seed, **effort)
        method = f"residual bootstrap ({b} draws, refitted as the observed)"
    else:
        lr_p, method = float(chi2.sf(lr, 1)), "chi-square (1 df; invalid with parameters at bounds)"
    f_stat, f_p, coef = _linear_f_test(laws["additive"], add.params, train)
    ratio = gain_ratio(laws["interaction"], inter.params)
    lo = hi = None
    if fits["interaction"].bootstrap:
        ratios = np.array([gain_ratio(laws["interaction"], d) for d in fits["interaction"].bootstrap])
        lo, hi = float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))
    delta_bic = float(add.bic - min(mul.bic, inter.bic))
    reject = lr_p <= ALPHA + 1e-12
    strength = ("strong" if delta_bic > 6.0 else "weak") if reject else "none"
    if not reject:
        supported, verdict = "additive", "additive"
    elif ratio >= 1.0:
        verdict = "amplifies"
        supported = "multiplicative" if mul.bic <= inter.bic else "interaction"
    else:
        supported, verdict = "interaction", "discounts"
    result = InteractionResult(fits=hyp, supported=supported, verdict=verdict, strength=strength,
                               delta_bic=delta_bic, lr_stat=float(lr) if math.isfinite(lr) else 0.0,
                               lr_p=float(lr_p), lr_p_method=method, f_stat=f_stat, f_p=f_p, interaction_coef=coef,
                               gain_ratio=float(ratio), gain_ratio_lo=lo, gain_ratio_hi=hi, n_points=n)
    return result, fits
