"""Choosing a law form by how well it extrapolates up the ladder, on the fitted runs only.

``--law auto`` for a loss (``loss``, ``bpb``) compares candidate forms by *rung
cross-validation*: each candidate is fitted on the ``fit`` runs of every model size but the
largest fitted one, and predicts the ``fit`` runs of that largest fitted size. The form
with the lowest relative MAE there (MAE over the mean observed value) is chosen. The
held-out runs are never looked at, so the choice cannot be tuned on them; the criterion is
the one the held-out check itself applies (a prediction one rung up), at a shorter reach.
A richer form has to earn its parameters, and a near-tie must not hang on the machine's floating
point (the fits are nonconvex): by the one-standard-error rule, the form with the fewest
parameters whose CV error is within one standard error of the lowest one is chosen
(``cv_relative_mae <= min + SE(min)``, with ``SE`` the standard error of the mean of that
form's per-run relative absolute errors). Among equally many parameters the earlier listed wins.
With fewer than three fitted sizes there is nothing to extrapolate to, and the choice falls
back to the lowest BIC on the whole fitted split.

The chosen form's CV errors also measure how far off a prediction one rung up is, beyond
the noise of the runs themselves:
``extrapolation_sd = sqrt(max(0, RMS(r)^2 - s^2)) / log10(N_top / N_below)``, with ``r`` the
log residuals ``log(y / pred)`` of a loss (raw residuals of a score) at the predicted size
and ``s`` the CV fit's own residual SD, per decade of model size. A run's noise is already
in every interval (:func:`fit.predict.predict_points` adds the residual SD), so only the
excess of the CV error over it is the law's extrapolation error; counting the whole RMS
would count the noise twice. Prediction intervals add that excess, scaled by how many
decades a point lies above the largest fitted size, so a law that extrapolated badly one
rung up says so in its intervals further up.

The same CV step measures how well the law gets the *differences* between runs one rung up,
which is what a gain between two plans is: the slope ``b`` of the observed on the predicted
differences (:func:`effect_slope`). ``effect_sd = sqrt(max(0, (b - 1)^2 - SE(b)^2)) / decades``
is the relative error of a predicted difference per decade of model size, beyond what the
slope's own noise explains; ``allocate`` scales its gain draws by ``1 + effect_sd x decades x z``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from fit.fitting import fit_law
from fit.laws import Law
from fit.models import LawCandidate, LawSelection, Points

__all__ = ["effect_slope", "one_se_choice", "select_law"]


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


def select_law(points: Points, candidates: Mapping[str, Law], *, n_starts: int = 8, max_grid: int = 4096,
               seed: int = 0, huber_delta: float | None = None) -> LawSelection:
    """Score every candidate by rung cross-validation over the ``fit`` points; pick the best.

    Parameters
    ----------
    points : the experiment's points (``heldout`` points are ignored).
    candidates : label -> law (labels are what ``LawSelection.chosen`` names), simplest first.
    n_starts, max_grid, seed, huber_delta : passed to :func:`fit.fitting.fit_law`.

    Returns the :class:`fit.models.LawSelection`; a candidate whose fit fails to converge
    or predicts a non-finite value is kept in the table with ``cv_relative_mae = None``
    and cannot be chosen.
    """
    if not candidates:
        raise ValueError("select_law needs at least one candidate law")
    fitted = points.subset(points.split_array() == "fit")
    n = np.asarray(fitted.inputs["N"], dtype=float)
    sizes = sorted(set(n.tolist()))
    rows: list[LawCandidate] = []
    noise: dict[str, float] = {}
    pairs: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if len(sizes) >= 3:
        top = sizes[-1]
        train = fitted.model_copy(update={"split": ["heldout" if x == top else "fit" for x in n]})
        for label, law in candidates.items():
            res = fit_law(train, law, n_starts=n_starts, max_grid=max_grid, seed=seed, huber_delta=huber_delta)
            h = res.heldout  # fit_law scores the top size's runs: the CV step is its ordinary held-out check
            ok = res.converged and h is not None and bool(np.isfinite(h.mae))
            if ok:
                y = np.array([p.actual for p in h.points])
                pred = np.array([p.predicted for p in h.points])
                noise[label] = float(res.residual_sd)
                pairs[label] = ((np.log(np.maximum(y, 1e-300)), np.log(np.maximum(pred, 1e-300)))
                                if law.target == "loss" else (y, pred))
            se = _relative_mae_se(y, pred) if ok else None
            rows.append(LawCandidate(label=label, law=law.name, n_params=law.n_params,
                                     cv_mae=h.mae if ok else None, cv_relative_mae=h.relative_mae if ok else None,
                                     cv_relative_mae_se=se, bic=res.bic, converged=res.converged))
        scored = [r for r in rows if r.cv_relative_mae is not None]
        if scored:
            best = one_se_choice(scored)
            actual, predicted = pairs[best.label]  # log values for a loss: residuals log(y / pred)
            rms = float(np.sqrt(np.mean((actual - predicted) ** 2)))
            excess = _beyond(rms, noise[best.label])
            decades = math.log10(top / sizes[-2])
            slope, se = effect_slope(actual, predicted)
            effect = _beyond(slope - 1.0, se) / decades if slope is not None and se is not None else None
            return LawSelection(criterion="rung_cv", predicted_size=top, fit_sizes=sizes[:-1], candidates=rows,
                                chosen=best.label, extrapolation_sd=excess / decades, cv_rms=rms,
                                cv_noise_sd=noise[best.label], effect_slope=slope, effect_slope_se=se,
                                effect_sd=effect)
        rows = []
    for label, law in candidates.items():
        res = fit_law(fitted, law, n_starts=n_starts, max_grid=max_grid, seed=seed, huber_delta=huber_delta)
        rows.append(LawCandidate(label=label, law=law.name, n_params=law.n_params, bic=res.bic,
                                 converged=res.converged))
    best = min((r for r in rows if r.converged), key=lambda r: r.bic, default=rows[0])
    return LawSelection(criterion="bic", predicted_size=None, fit_sizes=sizes, candidates=rows, chosen=best.label)
