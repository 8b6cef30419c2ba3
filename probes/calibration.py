"""Calibrate the probe's decision threshold on one split, measure agreement on another.

Actions are split by trajectory (all actions of a trajectory fall on the same side, so a
trajectory's style cannot leak across), with a seeded permutation. The threshold
maximises agreement on the calibration split; agreement, balanced accuracy, ROC AUC and
the confusion matrix are reported on the evaluation split only. A missing score (probe
failure) is never grounded: it counts as below every threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from probes.models import CalibrationReport, ConfusionMatrix
from toolscale.errors import UsageError

__all__ = ["split_groups", "best_threshold", "confusion", "roc_auc", "calibrate", "verdicts"]


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


def best_threshold(scores: Sequence[float | None], labels: Sequence[bool]) -> float:
    """The threshold maximising agreement; ties go to the middle of the best candidates.

    Candidates are midpoints between consecutive distinct finite scores, plus one below
    and one above all of them.
    """
    s, y = _as_array(scores), np.asarray(labels, dtype=bool)
    finite = np.unique(s[np.isfinite(s)])
    if finite.size == 0:
        return math.inf
    cands = np.concatenate([[finite[0] - 1.0], (finite[:-1] + finite[1:]) / 2, [finite[-1] + 1.0]])
    acc = np.array([((np.isfinite(s) & (s >= t)) == y).mean() for t in cands])
    best = np.flatnonzero(acc == acc.max())
    return float(cands[best[len(best) // 2]])


def roc_auc(scores: Sequence[float | None], labels: Sequence[bool]) -> float | None:
    """Probability that a derivable action outscores a non-derivable one (ties count 1/2)."""
    s, y = _as_array(scores), np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    if pos.size == 0 or neg.size == 0:
        return None
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (pos.size * neg.size))


def calibrate(scores: Sequence[float | None], labels: Sequence[bool], groups: Sequence[int], *,
              reference: Literal["injected", "provenance"], fraction: float = 0.5, seed: int = 0,
              target: float = 0.85) -> CalibrationReport | None:
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
    :math:`(TP/(TP+FN) + TN/(TN+FP)) / 2`, which is 0.5 for a constant verdict.
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
    tpr = cm.tp / (cm.tp + cm.fn) if cm.tp + cm.fn else None
    tnr = cm.tn / (cm.tn + cm.fp) if cm.tn + cm.fp else None
    bal = (tpr + tnr) / 2 if tpr is not None and tnr is not None else None
    return CalibrationReport(reference=reference, threshold=t, n_calibration=int(cal.sum()),
                             n_evaluation=int((~cal).sum()), calibration_agreement=cm_cal.agreement,
                             agreement=cm.agreement, balanced_accuracy=bal, auc=roc_auc(s_ev, y[~cal]),
                             confusion=cm, target=target)
