"""Choosing a law form by how well it extrapolates up the ladder, on the fitted runs only.

``--law auto`` for a loss (``loss``, ``bpb``) compares candidate forms by *rolling rung
cross-validation*: with fitted model sizes ``N_0 < ... < N_{M-1}``, fold ``j`` (``j = 2 .. M - 1``)
fits each candidate on the ``fit`` runs of the sizes below ``N_j`` and predicts the ``fit`` runs at
``N_j`` (larger sizes are left out of that fold). A candidate's CV error is its relative MAE (MAE over
the mean observed value) on the largest fold (the most sizes fitted, the reach the law is used at;
a fold fitted on two sizes is mostly noise). The held-out runs are never looked at, so the choice
cannot be tuned on them; the criterion is the one the held-out check itself applies (a prediction one
rung up), at a shorter reach. A richer form has to earn its parameters, and a near-tie must not hang
on the machine's floating point (the fits are nonconvex): by the one-standard-error rule, the form with
the fewest parameters whose CV error is within one standard error of the lowest one is chosen
(``cv_relative_mae <= min + SE(min)``, with ``SE`` the standard error of the mean of that form's per-run
relative absolute errors). Among equally many parameters the earlier listed wins. With fewer than three
fitted sizes there is nothing to extrapolate to, and the choice falls back to the lowest BIC on the
whole fitted split.

The CV errors also measure how far off a prediction one rung up is, beyond the noise of the runs
themselves. On fold ``j``, ``e_j = sqrt(max(0, RMS(r_j)^2 - s_j^2))`` with ``r_j`` the log residuals
``log(y / pred)`` of a loss (raw residuals of a score) at ``N_j`` and ``s_j`` the fold fit's own
residual SD. Pooled over folds, per decade of model size,
``extrapolation_sd = sqrt(sum_j e_j^2 / sum_j d_j^2)``, ``d_j = log10(N_j / N_{j-1})``. A run's noise
is already in every interval (:func:`fit.predict.predict_points` adds the residual SD), so only the
excess is the law's extrapolation error.

The chosen form's own CV error is biased low: it won on those folds (the winner's curse). The
pooled error is therefore corrected for the selection (Varma and Simon 2006; Cawley and Talbot 2010):

* ``nested``: outer fold ``j`` uses the form chosen, by the same rule, on the fold below it (``j - 1``),
  and only outer folds with a fold below enter the pool (needs 4+ fitted sizes);
* ``runner_up``: with a single fold (3 fitted sizes) there is nothing to nest, so each fold's error is
  the larger of the chosen and the runner-up form's (the runner-up did not win on these folds).

A rung is a fitted size with at least :data:`MIN_RUNG_RUNS` runs. A size with fewer (one verification
run at a larger size, a proposal's lone run at the target size) is fitted like any other, but it is not a
fold's predicted size: a CV error of one run has no standard error, so the one-SE rule could not weigh it,
and it says nothing about the differences between runs.

The same CV step measures how well the law gets the *differences* between runs one rung up,
which is what a gain between two plans is: the slope ``b`` of the observed on the predicted
differences at the largest fold (:func:`effect_slope`). ``effect_sd = sqrt(max(0, (b - 1)^2 -
SE(b)^2)) / decades`` is the relative error of a predicted difference per decade of model size,
beyond what the slope's own noise explains; ``allocate`` scales its gain draws by
``1 + effect_sd x decades x z``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fit.fitting import fit_law
from fit.laws import Law
from fit.models import CVFold, LawCandidate, LawSelection, Points

__all__ = ["effect_slope", "one_se_choice", "select_law", "choose", "rung_sizes", "MIN_RUNG_RUNS"]

MIN_RUNG_RUNS = 3
"""Fitted runs a size needs to be a rung: a rung-CV fold's predicted size, and a size whose differences between
runs the law was fitted on (:attr:`fit.models.FitResult.max_compared_n`). Three is the fewest with a slope of
the differences and its standard error (:func:`effect_slope`)."""


def rung_sizes(points: Points) -> list[float]:
    """The sizes ``N`` (ascending) with at least :data:`MIN_RUNG_RUNS` of ``points``' ``fit`` points at final
    checkpoints."""
    fitted = points.subset(points.split_array() == "fit")
    if fitted.final:
        fitted = fitted.subset(fitted.final)
    sizes, counts = np.unique(np.asarray(fitted.inputs["N"], dtype=float), return_counts=True)
    return [float(x) for x, c in zip(sizes, counts) if c >= MIN_RUNG_RUNS]


def effect_slope(actual: np.ndarray, predicted: np.ndarray) -> tuple[float | None, float | None]:
    """Least-squares slope of the observed differences between runs on the predicted ones, and its SE.

    ``actual`` and ``predicted`` (shape ``(n,)``, log values for a loss) are the runs of one rung
    that the law predicted from the rungs below. Both are centred, so the level error drops out:
    ``b = sum(a c) / sum(a^2)`` with ``a`` the centred predictions and ``c`` the centred observations.
    ``b = 1`` when the law gets the differences between recipes (and token counts) right one rung up;
    ``b = 2`` when they are twice as large as it says. ``SE(b)^2 = s^2 / sum(a^2)``, ``s^2`` the
    residual variance of that regression (``n - 2`` degrees of freedom). None, None with fewer than 3
    runs or no spread in the predictions.
    """
    a = np.asarray(predicted, dtype=float) - np.mean(predicted)
    c = np.asarray(actual, dtype=float) - np.mean(actual)
    saa = float(np.sum(a * a))
    if a.size < 3 or not saa > 0.0:
        return None, None
    b = float(np.sum(a * c) / saa)
    s2 = float(np.sum((c - b * a) ** 2)) / (a.size - 2)
    return b, math.sqrt(s2 / saa)


def _relative_mae_se(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Standard error of a relative MAE: ``SD(|y - pred|) / sqrt(n) / mean(y)``, in natural units.

    ``actual`` and ``predicted`` (shape ``(n,)``) are the runs' observed and predicted values in the
    metric's natural units, as ``cv_relative_mae`` takes them. 0 with fewer than 2 runs.
    """
    y, pred = np.asarray(actual, dtype=float), np.asarray(predicted, dtype=float)
    if y.size < 2:
        return 0.0
    return float(np.std(np.abs(y - pred), ddof=1) / math.sqrt(y.size) / abs(np.mean(y)))


def one_se_choice(scored: list[LawCandidate]) -> LawCandidate:
    """The candidate with the fewest parameters whose CV error is within one SE of the lowest.

    ``scored`` lists candidates with a ``cv_relative_mae``, simplest first; among equally many
    parameters the earlier one wins. The threshold is ``min + SE(min)`` (Hastie, Tibshirani and
    Friedman, *Elements of Statistical Learning*, 7.10): a form that is only better within its
    own noise does not earn its extra parameters, and the choice does not flip on a near-tie.
    """
    low = min(scored, key=lambda r: r.cv_relative_mae or 0.0)
    bar = (low.cv_relative_mae or 0.0) + (low.cv_relative_mae_se or 0.0)
    within = [r for r in scored if (r.cv_relative_mae or 0.0) <= bar]
    return min(within, key=lambda r: (r.n_params, scored.index(r)))


def _beyond(error: float, noise: float) -> float:
    """``sqrt(max(0, error^2 - noise^2))``: the part of an error its noise does not explain."""
    return math.sqrt(max(0.0, error ** 2 - noise ** 2))


@dataclass(frozen=True)
class _Score:
    """One candidate on one fold."""

    mae: float
    relative_mae: float
    relative_mae_se: float
    """Standard error of ``relative_mae`` (:func:`_relative_mae_se`)."""
    excess: float
    """CV error beyond the fold fit's noise (residual units)."""
    rms: float
    noise: float
    actual: np.ndarray
    """Observed values at the predicted size (log values for a loss)."""
    predicted: np.ndarray


def _score_fold(fitted: Points, law: Law, top: float, **fit_kw) -> tuple[_Score | None, float, bool]:
    """``(score or None, bic, converged)`` of ``law`` fitted below ``top`` and predicting the runs at ``top``."""
    n = np.asarray(fitted.inputs["N"], dtype=float)
    fold = fitted.subset(n <= top)
    fold = fold.model_copy(update={"split": ["heldout" if x == top else "fit" for x in n[n <= top]]})
    res = fit_law(fold, law, **fit_kw)
    h = res.heldout  # fit_law scores the predicted size's runs: the CV step is its ordinary held-out check
    if not (res.converged and h is not None and bool(np.isfinite(h.mae))):
        return None, res.bic, res.converged
    y = np.array([p.actual for p in h.points])
    pred = np.array([p.predicted for p in h.points])
    se = _relative_mae_se(y, pred)
    if law.target == "loss":
        y, pred = np.log(np.maximum(y, 1e-300)), np.log(np.maximum(pred, 1e-300))
    rms = float(np.sqrt(np.mean((y - pred) ** 2)))
    score = _Score(mae=float(h.mae), relative_mae=float(h.relative_mae if h.relative_mae is not None else np.nan),
                   relative_mae_se=se, excess=_beyond(rms, float(res.residual_sd)), rms=rms, noise=float(res.residual_sd), actual=y,
                   predicted=pred)
    return score, res.bic, res.converged


def choose(fold: Mapping[str, _Score | None], n_params: Mapping[str, int]) -> str | None:
    """The label :func:`one_se_choice` picks on one fold's scores (``fold`` in candidate order, simplest first);
    None when no candidate scored there."""
    scored = [LawCandidate(label=lb, law=lb, n_params=n_params[lb], cv_relative_mae=s.relative_mae,
                           cv_relative_mae_se=s.relative_mae_se, bic=0.0)
              for lb, s in fold.items() if s is not None and math.isfinite(s.relative_mae)]
    return one_se_choice(scored).label if scored else None


def _pooled(excess: list[float], decades: list[float]) -> float:
    """``sqrt(sum e^2 / sum d^2)``: CV excess per decade of N pooled over folds."""
    return math.sqrt(sum(e * e for e in excess) / sum(d * d for d in decades))


def _corrected(labels: list[str], scores: list[dict[str, _Score | None]], decades: list[float], chosen: str,
               n_params: Mapping[str, int]) -> tuple[str, list[CVFold], float]:
    """``(correction, folds, pooled sd)``: the selection-corrected extrapolation error (module docstring)."""
    folds = []
    if len(labels) == 1:  # nothing was chosen: the form's own errors, every fold
        excess = [s[chosen].excess for s in scores]  # type: ignore[union-attr]
        folds = [CVFold(fit_sizes=[], predicted_size=0.0, decades=d, excess=e) for d, e in zip(decades, excess)]
        return "none", folds, _pooled(excess, decades)
    if len(scores) >= 2:  # nested: each outer fold's form chosen on the folds below it
        used_e, used_d = [], []
        for j in range(len(scores)):
            inner = choose(scores[j - 1], n_params) if j else None
            s = scores[j].get(inner) if inner else None
            if s is not None:
                used_e.append(s.excess)
                used_d.append(decades[j])
            folds.append(CVFold(fit_sizes=[], predicted_size=0.0, decades=decades[j], chosen=inner,
                                excess=s.excess if s is not None else None))
        if used_e:
            return "nested", folds, _pooled(used_e, used_d)
        folds = []
    ranked = sorted((lb for lb in labels if all(s.get(lb) for s in scores)),
                    key=lambda lb: scores[-1][lb].relative_mae)  # type: ignore[union-attr]
    runner = next((lb for lb in ranked if lb != chosen), None)
    excess = [max(s[chosen].excess, s[runner].excess) if runner else s[chosen].excess for s in scores]
    folds = [CVFold(fit_sizes=[], predicted_size=0.0, decades=d, chosen=None, excess=e) for d, e in zip(decades, excess)]
    return ("runner_up" if runner else "none"), folds, _pooled(excess, decades)


def _effect(scores: list[dict[str, _Score | None]], chosen: str, decades: list[float], tops: list[float]
            ) -> tuple[float | None, float | None, float | None, float | None]:
    """``(slope, SE, effect_sd, predicted size)`` of the differences on the largest fold with a slope (a fold of
    replicates of one recipe has none), all None when no fold has one."""
    for j in range(len(scores) - 1, -1, -1):
        s = scores[j][chosen]
        slope, se = effect_slope(s.actual, s.predicted) if s is not None else (None, None)
        if slope is not None and se is not None:
            return slope, se, _beyond(slope - 1.0, se) / decades[j], tops[j]
    return None, None, None, None


def _fittable(candidates: Mapping[str, Law], fitted: Points, rungs: list[float]) -> dict[str, Law]:
    """The candidates with fewer parameters than the runs of the smallest fit they get (the first rung-CV fold:
    every size below the third rung; every fitted run with fewer than 3 rungs). A form too large for it cannot be scored
    on every fold, so it cannot be chosen (the demo's 5 recipes a width give 10 runs there). FitInputError when
    none is left."""
    n = np.asarray(fitted.inputs["N"], dtype=float)
    smallest = int(np.sum(n < rungs[2])) if len(rungs) >= 3 else fitted.n
    usable = {lb: law for lb, law in candidates.items() if law.n_params + 1 <= smallest}
    if not usable:
        from fit.errors import FitInputError

        fewest = min(law.n_params for law in candidates.values()) + 1
        raise FitInputError(f"every candidate law needs at least {fewest} fitted runs in its smallest fit; "
                            f"got {smallest} (fit more recipes or seeds per size)")
    return usable


def select_law(points: Points, candidates: Mapping[str, Law], *, n_starts: int = 8, max_grid: int = 4096,
               seed: int = 0, huber_delta: float | None = None) -> LawSelection:
    """Score every candidate by rolling rung cross-validation over the ``fit`` points; pick the best.

    Parameters
    ----------
    points : the experiment's points (``heldout`` points are ignored).
    candidates : label -> law (labels are what ``LawSelection.chosen`` names), simplest first.
    n_starts, max_grid, seed, huber_delta : passed to :func:`fit.fitting.fit_law`.

    Returns the :class:`fit.models.LawSelection`; a candidate whose fit fails to converge or predicts
    a non-finite value on some fold is kept in the table with ``cv_relative_mae = None`` and cannot be
    chosen. ``extrapolation_sd`` is the selection-corrected pooled CV excess (module docstring).
    """
    if not candidates:
        raise ValueError("select_law needs at least one candidate law")
    fitted = points.subset(points.split_array() == "fit")
    sizes = sorted(set(np.asarray(fitted.inputs["N"], dtype=float).tolist()))
    fit_kw = dict(n_starts=n_starts, max_grid=max_grid, seed=seed, huber_delta=huber_delta)
    rungs = rung_sizes(fitted)
    candidates = _fittable(candidates, fitted, rungs)
    if len(rungs) < 3:
        rows = []
        for label, law in candidates.items():
            res = fit_law(fitted, law, **fit_kw)
            rows.append(LawCandidate(label=label, law=law.name, n_params=law.n_params, bic=res.bic,
                                     converged=res.converged))
        best = min((r for r in rows if r.converged), key=lambda r: r.bic, default=rows[0])
        return LawSelection(criterion="bic", predicted_size=None, fit_sizes=sizes, candidates=rows, chosen=best.label)
    tops = rungs[2:]
    labels = list(candidates)
    scores: list[dict[str, _Score | None]] = [{} for _ in tops]
    bics: dict[str, float] = {}
    conv: dict[str, bool] = {}
    for j, top in enumerate(tops):
        for label, law in candidates.items():
            scores[j][label], bics[label], conv[label] = _score_fold(fitted, law, top, **fit_kw)
    rows = []
    for label, law in candidates.items():
        rel = [s[label].relative_mae if s[label] else None for s in scores]
        mae = scores[-1][label].mae if scores[-1][label] else None  # type: ignore[union-attr]
        ok = all(v is not None for v in rel)  # a form that failed on some fold cannot be chosen
        last = scores[-1][label]
        rows.append(LawCandidate(label=label, law=law.name, n_params=law.n_params, cv_mae=mae if ok else None,
                                 cv_relative_mae=rel[-1] if ok else None,
                                 cv_relative_mae_se=last.relative_mae_se if ok and last else None,
                                 cv_fold_relative_mae=rel,
                                 cv_fold_relative_mae_se=[sc[label].relative_mae_se if sc[label] else None
                                                          for sc in scores],
                                 bic=bics[label], converged=conv[label]))
    scored = [r for r in rows if r.cv_relative_mae is not None]
    chosen = one_se_choice(scored).label if scored else None
    if chosen is None:  # no candidate extrapolated on every fold: the lowest BIC of the largest fold's fits
        best = min((r for r in rows if r.converged), key=lambda r: r.bic, default=rows[0])
        return LawSelection(criterion="rung_cv", predicted_size=tops[-1], fit_sizes=[x for x in sizes if x < tops[-1]], candidates=rows,
                            chosen=best.label)
    decades = [math.log10(top / sizes[sizes.index(top) - 1]) for top in tops]
    correction, folds, sd = _corrected(labels, scores, decades, chosen, {lb: law.n_params for lb, law in candidates.items()})
    folds = [f.model_copy(update={"fit_sizes": sizes[:sizes.index(t)], "predicted_size": t})
             for f, t in zip(folds, tops)]
    last = scores[-1][chosen]
    assert last is not None  # noqa: S101 - a chosen form scored on every fold
    own = _pooled([s[chosen].excess for s in scores], decades)  # type: ignore[union-attr]
    slope, se, effect, at = _effect(scores, chosen, decades, tops)
    return LawSelection(criterion="rung_cv", predicted_size=tops[-1], fit_sizes=[x for x in sizes if x < tops[-1]], candidates=rows,
                        chosen=chosen, extrapolation_sd=sd, cv_rms=last.rms, cv_noise_sd=last.noise,
                        effect_slope=slope, effect_slope_se=se, effect_sd=effect, effect_size=at, folds=folds,
                        correction=correction, extrapolation_sd_chosen=own)
