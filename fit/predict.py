"""Predictions with intervals that include the law's form: the API ``predict``, ``allocate`` and ``verify`` call.

A stored :class:`fit.models.FitResult` may carry other candidate forms (``fit.forms``, each
with a ``form_weight``; the fit's own weight is ``fit.form_weight``). The interval of a new
point mixes them: each form contributes simulated outcomes in proportion to its weight,
each outcome being one of that form's bootstrap parameter draws plus a noise draw of that
form's residual SD (log scale for log residuals). The point prediction is the fitted law's.

Example
-------
>>> from fit.predict import predict_points          # doctest: +SKIP
>>> pred, lo, hi = predict_points(fit, {"N": [1.3e10], "D": [5e12]}, level=0.90)
>>> prediction = predict_at(fit, [{"N": 1.3e10, "D": 5e12}])   # a Prediction model, FLOPs range included
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fit.errors import FitInputError
from fit.laws import Law, law_of
from fit.models import FitResult, PointPrediction, Prediction
from toolscale.config import training_flops

__all__ = ["bic_weights", "components", "predict_points", "predict_at", "required_inputs",
           "check_point", "beyond_fitted", "FRACTION_AXES"]

FRACTION_AXES = frozenset({"repair_rate", "coverage_quota"})
"""Axes that are shares in [0, 1] when no config says an axis's unit (imported experiments)."""

N_SIMS = 4000
"""Simulated outcomes per point behind each interval."""


def bic_weights(bic: Mapping[str, float]) -> dict[str, float]:
    """``w_k = exp(-(BIC_k - BIC_min) / 2) / sum_j exp(-(BIC_j - BIC_min) / 2)`` (Schwarz weights)."""
    best = min(bic.values())
    raw = {k: math.exp(-0.5 * (v - best)) for k, v in bic.items()}
    total = sum(raw.values())
    return {k: v / total for k, v in raw.items()}


def components(fit: FitResult, law: Law | None = None) -> list[tuple[FitResult, Law, float]]:
    """``(fit, law, weight)`` of every form mixed into the intervals, weights summing to 1.

    ``law``: the fit's own law when it is not registered (default :func:`fit.laws.law_of`)."""
    comps = [(fit, law or law_of(fit), fit.form_weight if fit.forms else 1.0)]
    comps += [(f, law_of(f), f.form_weight) for f in fit.forms]
    total = sum(w for _, _, w in comps)
    return [(f, law, w / total) for f, law, w in comps if w > 0]


def required_inputs(fit: FitResult, law: Law | None = None) -> tuple[str, ...]:
    """Input names a prediction needs (for a two-step law, stage 1's)."""
    law = law or law_of(fit)
    return law.stages[0].axes if law.stages is not None else law.axes


def predict_points(fit: FitResult, X: Mapping[str, Any], *, level: float = 0.90, seed: int = 0,
                   law: Law | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point prediction and a ``level`` prediction interval at ``X``, forms mixed by weight.

    Parameters
    ----------
    fit : a stored fit (``FitResult.model_validate(payload)``).
    X : ``input name -> values`` in natural units (N in parameters, D in tokens, axes in their units);
        every name of :func:`required_inputs`.
    level : nominal coverage of ``[lo, hi]``.
    law : the fit's own law when it is not registered (default :func:`fit.laws.law_of`).

    Returns
    -------
    (predicted, lo, hi), each of shape ``(n,)``.
    """
    own = law or law_of(fit)
    need = required_inputs(fit, own)
    missing = [a for a in need if a not in X]
    if missing:
        raise FitInputError(f"prediction needs input {missing[0]!r} (law {fit.law!r} reads {', '.join(need)})")
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # undefined points come back non-finite
        return _predict_points(fit, X, own, level=level, seed=seed)


def _predict_points(fit: FitResult, X: Mapping[str, Any], own: Law, *, level: float, seed: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    pred = np.atleast_1d(own.predict(fit.params, X))
    rng = np.random.default_rng(seed)
    sims = []
    for f, form, w in components(fit, own):
        k = max(1, int(round(w * N_SIMS)))
        draws = f.draws()
        idx = rng.integers(0, len(draws), size=k) if len(draws) > 1 else np.zeros(k, dtype=int)
        per_draw = np.stack([np.atleast_1d(form.predict(d, X)) for d in draws])
        s = per_draw[idx]
        noise = rng.normal(0.0, f.residual_sd, size=s.shape)
        sims.append(np.maximum(s, 1e-300) * np.exp(noise) if f.residual_scale == "log" else s + noise)
    allsims = np.concatenate(sims, axis=0)
    allsims = _with_extrapolation(fit, X, allsims, rng)
    q = (1 - level) / 2
    return pred, np.quantile(allsims, q, axis=0), np.quantile(allsims, 1 - q, axis=0)


def _with_extrapolation(fit: FitResult, X: Mapping[str, Any], sims: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:
    """``sims`` (shape ``(k, n)``) with the fit's extrapolation error added: SD ``extrapolation_sd x
    decades of N above max_fitted_n`` (0 inside the fitted range), multiplicative for log residuals."""
    if not fit.extrapolation_sd or not fit.max_fitted_n or "N" not in X:
        return sims
    decades = np.maximum(np.log10(np.asarray(X["N"], dtype=float) / fit.max_fitted_n), 0.0)
    eps = rng.normal(0.0, 1.0, size=sims.shape) * (fit.extrapolation_sd * decades)
    return np.maximum(sims, 1e-300) * np.exp(eps) if fit.residual_scale == "log" else sims + eps


_POSITIVE_KINDS = ("size", "tokens", "unique_tokens", "flops", "diversity")
"""Input kinds that enter as a ratio ``x / ref`` (their logarithm in most laws): only positive values exist."""


def check_point(fit: FitResult, point: Mapping[str, float], *, units: Mapping[str, str] | None = None,
                label: str = "") -> None:
    """FitInputError naming the input when ``point`` has an input the law does not read, or a value outside its
    domain: sizes, tokens, FLOPs and diversity levels must be > 0, a fraction in [0, 1], any other axis >= 0.

    ``units``: axis -> unit from the experiment's config (``fraction`` marks a share); without one, the axes of
    :data:`FRACTION_AXES` are shares.
    """
    import difflib

    law = law_of(fit)
    need = required_inputs(fit, law)
    kinds = {i.name: i.kind for i in (law.stages[0].inputs if law.stages is not None else law.inputs)}
    shown = {"N": "model_size", "D": "train_tokens"}
    where = f"--at {label}: " if label else ""
    for name, value in point.items():
        if name not in need:
            names = [shown.get(a, a) for a in need]
            close = difflib.get_close_matches(shown.get(name, name), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise FitInputError(f"{where}unknown input {shown.get(name, name)!r}{hint}; law {fit.law!r} reads "
                                f"{', '.join(names)}")
        unit = (units or {}).get(name) or ("fraction" if name in FRACTION_AXES else "")
        kind = kinds.get(name, "")
        if kind in _POSITIVE_KINDS and not value > 0:
            raise FitInputError(f"{where}{shown.get(name, name)} must be > 0 (a {kind.replace('_', ' ')}), got {value:g}")
        if unit == "fraction" and not 0.0 <= value <= 1.0:
            raise FitInputError(f"{where}{name} is a fraction and must be in [0, 1], got {value:g}")
        if value < 0:
            raise FitInputError(f"{where}{name} must be >= 0 (a level in {unit or 'its unit'}), got {value:g}")


def beyond_fitted(fit: FitResult, point: Mapping[str, float]) -> dict[str, float]:
    """Inputs of ``point`` outside the fit's fitted ranges: ``value / max`` above, ``min / value`` below."""
    out: dict[str, float] = {}
    for name, value in point.items():
        rng = fit.fitted_ranges.get(name)
        if rng is None:
            continue
        lo, hi = rng
        if value > hi * (1 + 1e-9):
            out[name] = value / hi if hi > 0 else math.inf
        elif value < lo * (1 - 1e-9) if lo > 0 else value < lo:
            out[name] = lo / value if value > 0 else math.inf
    return out


def undefined(fit: FitResult, points: Sequence[Mapping[str, float]], *arrays: np.ndarray) -> None:
    """FitInputError naming the first point whose prediction or interval is not finite (the law is undefined
    there, e.g. an effective-data multiplier below 0 under an axis's tested minimum), and the inputs below the
    fitted range that explain it."""
    bad = ~np.all(np.isfinite(np.stack([np.atleast_1d(a) for a in arrays])), axis=0)
    if not bad.any():
        return
    i = int(np.argmax(bad))
    below = [k for k in beyond_fitted(fit, points[i]) if points[i][k] < fit.fitted_ranges[k][0]]
    where = ", ".join(f"{k}={points[i][k]:g} (fitted minimum {fit.fitted_ranges[k][0]:g})" for k in below)
    raise FitInputError(f"--at #{i + 1}: law {fit.law!r} has no finite prediction there" +
                        (f"; {where} lies below the fitted range: predict at or above it" if below else ""))


def predict_at(fit: FitResult, points: Sequence[Mapping[str, float]], *, level: float = 0.90,
               max_fitted_flops: float | None = None, fit_id: str | None = None, seed: int = 0,
               units: Mapping[str, str] | None = None) -> Prediction:
    """A :class:`Prediction` of each point (inputs by name), with its interval and how far beyond the fitted range.

    ``max_fitted_flops``: the largest fitted run's training FLOPs; a point whose ``6 N D`` exceeds
    it is ``beyond_range`` by the factor ``extrapolation_factor``. Unknown inputs and points outside their inputs'
    domains are refused (:func:`check_point`; ``units``: axis -> unit from the experiment's config).
    """
    if not points:
        raise FitInputError("predict needs at least one point (--at model_size=...,train_tokens=...)")
    names = sorted({k for p in points for k in p})
    X = {k: np.array([float(p.get(k, math.nan)) for p in points]) for k in names}
    need = required_inputs(fit)
    for i, p in enumerate(points):
        absent = [a for a in need if a not in p]
        if absent:
            raise FitInputError(f"--at #{i + 1} lacks input {absent[0]!r}; law {fit.law!r} needs "
                                f"{', '.join(need)}")
    for i, p in enumerate(points):
        check_point(fit, p, units=units, label=f"#{i + 1}")
    pred, lo, hi = predict_points(fit, {k: X[k] for k in need}, level=level, seed=seed)
    undefined(fit, points, pred, lo, hi)
    out = []
    for i, p in enumerate(points):
        flops = training_flops(p["N"], p["D"]) if "N" in p and "D" in p else None
        factor = flops / max_fitted_flops if flops is not None and max_fitted_flops else None
        beyond = beyond_fitted(fit, p)
        out.append(PointPrediction(inputs={k: float(v) for k, v in p.items()}, predicted=float(pred[i]),
                                   lo=float(lo[i]), hi=float(hi[i]), level=level, flops=flops,
                                   beyond_range=bool((factor is not None and factor > 1.0) or beyond),
                                   extrapolation_factor=factor, beyond_inputs=beyond))
    weights = {f.law: w for f, _, w in components(fit)} if fit.forms else {}
    return Prediction(experiment=fit.experiment, benchmark=fit.benchmark, metric=fit.metric, law=fit.law,
                      fit_id=fit_id, form_weights=weights, max_fitted_flops=max_fitted_flops, points=out)
