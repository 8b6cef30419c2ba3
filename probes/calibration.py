"""Calibrate the probe's decision threshold on one split, measure agreement on another.

Actions are split by trajectory (all actions of a trajectory fall on the same side, so a
trajectory's style cannot leak across), with a seeded permutation. The threshold maximises
*balanced accuracy* on the calibration split (raw agreement would be won by calling everything
grounded at a base rate of 0.8); agreement, balanced accuracy, Cohen's kappa, ROC AUC, the
always-grounded baseline and the confusion matrix are reported on the evaluation split only, with
percentile bootstrap intervals that resample trajectories. A missing score (probe failure) is never
grounded: it counts as below every threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from probes.models import CalibrationReport, ConfusionMatrix, Interval, MetricIntervals
from toolscale.errors import UsageError

__all__ = ["split_groups", "best_threshold", "confusion", "roc_auc", "calibrate", "verdicts", "balanced_accuracy",
           "kappa", "bootstrap_intervals", "N_BOOTSTRAP"]

N_BOOTSTRAP = 1000
"""Bootstrap resamples of the evaluation split (trajectories drawn with replacement)."""


def split_groups(groups: Sequence[int], *, fraction: float = 0.5, seed: int = 0) -> np.ndarray:
    """Boolean mask, True for actions whose group (trajectory) is in the calibration split.

    ``round(fraction * n_groups)`` groups (at least 1 and at most ``n_groups - 1``) go to calibration.
    """
    if not 0.0 < fraction < 1.0:
        raise UsageError(f"calibration fraction must be in (0, 1), got {fraction}")
    uniq = sorted(set(groups))
    if len(uniq) < 2:
        return np.zeros(len(groups), dtype=bool)
    n_cal = min(max(1, round(fraction * len(uniq))), len(uniq) - 1)
    perm = np.random.default_rng(seed).permutation(len(uniq))
    cal = {uniq[i] for i in perm[:n_cal]}
    return np.array([g in cal for g in groups], dtype=bool)


def _as_array(scores: Sequence[float | None]) -> np.ndarray:
    return np.array([-math.inf if s is None or not math.isfinite(s) else float(s) for s in scores], dtype=float)


def verdicts(scores: Sequence[float | None], threshold: float) -> np.ndarray:
    """Grounded iff the score exists and ``score >= threshold``."""
    s = _as_array(scores)
    return np.isfinite(s) & (s >= threshold)


def confusion(pred: Sequence[bool], labels: Sequence[bool]) -> ConfusionMatrix:
    """Confusion matrix with positive = grounded/derivable."""
    p, y = np.asarray(pred, dtype=bool), np.asarray(labels, dtype=bool)
    return ConfusionMatrix(tp=int((p & y).sum()), fp=int((p & ~y).sum()), tn=int((~p & ~y).sum()),
                           fn=int((~p & y).sum()))


def balanced_accuracy(cm: ConfusionMatrix) -> float | None:
    """``(TP / (TP + FN) + TN / (TN + FP)) / 2``; None unless both classes are present (0.5 = a constant verdict)."""
    if cm.tp + cm.fn == 0 or cm.tn + cm.fp == 0:
        return None
    return (cm.tp / (cm.tp + cm.fn) + cm.tn / (cm.tn + cm.fp)) / 2


def kappa(cm: ConfusionMatrix) -> float | None:
    """Cohen's kappa ``(p_o - p_e) / (1 - p_e)`` with ``p_e`` from the marginals; None when empty or ``p_e = 1``."""
    n = cm.n
    if n == 0:
        return None
    po = (cm.tp + cm.tn) / n
    pe = ((cm.tp + cm.fp) * (cm.tp + cm.fn) + (cm.tn + cm.fn) * (cm.tn + cm.fp)) / n ** 2
    return None if pe >= 1.0 else (po - pe) / (1.0 - pe)


def best_threshold(scores: Sequence[float | None], labels: Sequence[bool]) -> float:
    """The threshold maximising balanced accuracy; ties go to the middle of the best candidates.

    Candidates are midpoints between consecutive distinct finite scores, plus one below and one above
    all of them. With one class only, balanced accuracy is undefined and agreement is maximised instead.
    """
    s, y = _as_array(scores), np.asarray(labels, dtype=bool)
    finite = np.unique(s[np.isfinite(s)])
    if finite.size == 0:
        return math.inf
    cands = np.concatenate([[finite[0] - 1.0], (finite[:-1] + finite[1:]) / 2, [finite[-1] + 1.0]])
    pred = np.isfinite(s)[None, :] & (s[None, :] >= cands[:, None])
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos and n_neg:
        acc = ((pred & y).sum(axis=1) / n_pos + (~pred & ~y).sum(axis=1) / n_neg) / 2
    else:
        acc = (pred == y).mean(axis=1)
    best = np.flatnonzero(acc >= acc.max() - 1e-12)
    return float(cands[best[len(best) // 2]])


def roc_auc(scores: Sequence[float | None], labels: Sequence[bool]) -> float | None:
    """Probability that a derivable action outscores a non-derivable one (ties count 1/2; rank formula)."""
    from scipy.stats import rankdata

    s, y = _as_array(scores), np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return None
    finite = np.isfinite(s)
    floor = float(s[finite].min()) - 1.0 if finite.any() else 0.0
    ranks = rankdata(np.where(finite, s, floor))  # failures rank below every score, tied among themselves
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bootstrap_intervals(scores: Sequence[float | None], labels: Sequence[bool], groups: Sequence[int],
                        threshold: float, *, n_bootstrap: int = N_BOOTSTRAP, level: float = 0.95,
                        seed: int = 0) -> MetricIntervals:
    """Percentile intervals of agreement, balanced accuracy, kappa and AUC at a fixed threshold.

    Trajectories (``groups``) are resampled with replacement, all of a trajectory's actions together
    (actions of one trajectory are not independent). Resamples where a figure is undefined (one class
    only) are left out of that figure's interval.
    """
    y = np.asarray(labels, dtype=bool)
    s = list(scores)
    pred = verdicts(s, threshold)
    g = np.asarray(groups)
    uniq = np.unique(g)
    members = [np.flatnonzero(g == u) for u in uniq]
    rng = np.random.default_rng(seed)
    figs: dict[str, list[float]] = {"agreement": [], "balanced_accuracy": [], "kappa": [], "auc": []}
    arr = _as_array(s)
    for _ in range(n_bootstrap):
        pick = rng.integers(0, len(uniq), len(uniq))
        idx = np.concatenate([members[i] for i in pick]) if len(pick) else np.array([], dtype=int)
        cm = confusion(pred[idx], y[idx])
        for name, v in (("agreement", cm.agreement), ("balanced_accuracy", balanced_accuracy(cm)),
                        ("kappa", kappa(cm)), ("auc", roc_auc(list(arr[idx]), list(y[idx])))):
            if v is not None:
                figs[name].append(v)
    lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100

    def iv(vals: list[float]) -> Interval | None:
        return Interval(low=float(np.percentile(vals, lo)), high=float(np.percentile(vals, hi))) if vals else None

    return MetricIntervals(level=level, n_bootstrap=n_bootstrap, **{k: iv(v) for k, v in figs.items()})


def calibrate(scores: Sequence[float | None], labels: Sequence[bool], groups: Sequence[int], *,
              reference: Literal["injected", "provenance"], fraction: float = 0.5, seed: int = 0,
              target: float = 0.85, n_bootstrap: int = N_BOOTSTRAP) -> CalibrationReport | None:
    """Pick the threshold on the calibration split; report agreement on the evaluation split.

    Parameters
    ----------
    scores : sequence of float or None
        Groundedness per action; None for probe failures (never grounded).
    labels : sequence of bool
        Reference label per action: True = derivable.
    groups : sequence of int
        Trajectory index per action (the split unit).
    reference : {"injected", "provenance"}
        What the labels are.
    fraction : float
        Share of trajectories in the calibration split.

    Returns
    -------
    CalibrationReport or None
        None when there are fewer than two trajectories (no separate evaluation split).

    Notes
    -----
    Agreement is :math:`(TP + TN) / n` on the evaluation split; balanced accuracy is
    :math:`(TP/(TP+FN) + TN/(TN+FP)) / 2`, which is 0.5 for a constant verdict; kappa is
    :math:`(p_o - p_e)/(1 - p_e)`. The threshold maximises balanced accuracy on the calibration split.
    Intervals: :func:`bootstrap_intervals` over the evaluation trajectories.
    """
    if not (len(scores) == len(labels) == len(groups)):
        raise UsageError(f"calibrate: scores, labels and groups must have equal lengths, got "
                         f"{len(scores)}, {len(labels)}, {len(groups)}")
    cal = split_groups(groups, fraction=fraction, seed=seed)
    if not cal.any() or cal.all():
        return None
    s, y = list(scores), np.asarray(labels, dtype=bool)
    s_cal = [x for x, c in zip(s, cal, strict=True) if c]
    s_ev = [x for x, c in zip(s, cal, strict=True) if not c]
    t = best_threshold(s_cal, y[cal])
    cm_cal = confusion(verdicts(s_cal, t), y[cal])
    cm = confusion(verdicts(s_ev, t), y[~cal])
    g_ev = [x for x, c in zip(groups, cal, strict=True) if not c]
    base = float(y[~cal].mean()) if (~cal).any() else None
    return CalibrationReport(reference=reference, threshold=t, n_calibration=int(cal.sum()),
                             n_evaluation=int((~cal).sum()), calibration_agreement=cm_cal.agreement,
                             agreement=cm.agreement, balanced_accuracy=balanced_accuracy(cm),
                             auc=roc_auc(s_ev, y[~cal]), kappa=kappa(cm), baseline_agreement=base,
                             intervals=bootstrap_intervals(s_ev, y[~cal], g_ev, t, n_bootstrap=n_bootstrap,
                                                           seed=seed),
                             confusion=cm, target=target)
