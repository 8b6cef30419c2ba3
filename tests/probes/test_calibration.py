from __future__ import annotations

import math

import numpy as np
import pytest

from probes.calibration import (balanced_accuracy, best_threshold, bootstrap_intervals, calibrate, confusion, kappa,
                                roc_auc, split_groups, verdicts)


def test_split_keeps_trajectories_together():
    groups = [0, 0, 1, 1, 1, 2, 3, 3]
    cal = split_groups(groups, fraction=0.5, seed=3)
    for g in set(groups):
        assert len({bool(c) for c, x in zip(cal, groups) if x == g}) == 1
    assert 0 < cal.sum() < len(groups)


def test_threshold_separates_and_failures_never_grounded():
    t = best_threshold([0.1, 0.2, 0.8, 0.9], [False, False, True, True])
    assert 0.2 < t < 0.8
    assert list(verdicts([None, 0.9, float("nan")], -math.inf)) == [False, True, False]


def test_confusion_and_auc():
    cm = confusion([True, True, False, False], [True, False, False, True])
    assert (cm.tp, cm.fp, cm.tn, cm.fn) == (1, 1, 1, 1) and cm.agreement == 0.5
    assert roc_auc([0.9, 0.1], [True, False]) == 1.0
    assert roc_auc([0.5, 0.5], [True, False]) == 0.5
    assert roc_auc([0.5], [True]) is None


def test_calibrate_reports_on_the_separate_split():
    rng = np.random.default_rng(0)
    labels = rng.random(400) < 0.7
    scores = np.where(labels, rng.normal(0.6, 0.1, 400), rng.normal(0.2, 0.1, 400))
    groups = np.arange(400) // 4
    rep = calibrate(list(scores), list(labels), list(groups), reference="injected", seed=0)
    assert rep.n_calibration + rep.n_evaluation == 400
    assert rep.confusion.n == rep.n_evaluation
    assert 0.3 < rep.threshold < 0.5
    assert rep.agreement > 0.95 and rep.auc > 0.97
    # a useless score stays near chance on the evaluation split
    noise = calibrate(list(rng.random(400)), list(labels), list(groups), reference="injected", seed=0)
    assert noise.balanced_accuracy is None or noise.balanced_accuracy < 0.65


def test_calibrate_needs_two_trajectories():
    assert calibrate([0.1, 0.2], [True, False], [0, 0], reference="provenance") is None
    with pytest.raises(Exception, match="equal lengths"):
        calibrate([0.1], [True, False], [0, 0], reference="provenance")


def test_threshold_is_not_won_by_the_base_rate():
    # 80% grounded; a weak score: maximising agreement would call everything grounded, balanced accuracy does not
    rng = np.random.default_rng(1)
    labels = rng.random(500) < 0.8
    scores = np.where(labels, rng.normal(0.55, 0.1, 500), rng.normal(0.45, 0.1, 500))
    t = best_threshold(list(scores), list(labels))
    pred = np.asarray(scores) >= t
    assert 0.2 < pred.mean() < 0.9  # not the constant verdict
    cm = confusion(pred, labels)
    assert balanced_accuracy(cm) > 0.6


def test_kappa_and_balanced_accuracy_of_constant_verdicts():
    labels = [True] * 8 + [False] * 2
    cm = confusion([True] * 10, labels)
    assert cm.agreement == 0.8 and balanced_accuracy(cm) == 0.5 and kappa(cm) == 0.0
    perfect = confusion(labels, labels)
    assert balanced_accuracy(perfect) == 1.0 and kappa(perfect) == 1.0
    assert balanced_accuracy(confusion([True, True], [True, True])) is None


def test_report_has_baseline_kappa_and_intervals_around_the_figures():
    rng = np.random.default_rng(2)
    labels = rng.random(600) < 0.75
    scores = np.where(labels, rng.normal(0.6, 0.15, 600), rng.normal(0.3, 0.15, 600))
    groups = np.arange(600) // 3
    rep = calibrate(list(scores), list(labels), list(groups), reference="injected", seed=0, n_bootstrap=200)
    ev_labels = labels[~split_groups(list(groups), seed=0)]
    assert rep.baseline_agreement == pytest.approx(ev_labels.mean())
    iv = rep.intervals
    assert iv is not None and iv.n_bootstrap == 200
    for name in ("agreement", "balanced_accuracy", "kappa", "auc"):
        ci, v = getattr(iv, name), getattr(rep, name)
        assert ci.low <= v <= ci.high and ci.high - ci.low < 0.2, name
    assert rep.kappa > 0.5


def test_intervals_shrink_with_more_trajectories():
    rng = np.random.default_rng(3)

    def width(n):
        labels = rng.random(n) < 0.7
        scores = np.where(labels, rng.normal(0.6, 0.2, n), rng.normal(0.4, 0.2, n))
        iv = bootstrap_intervals(list(scores), list(labels), list(range(n)), 0.5, n_bootstrap=300)
        return iv.balanced_accuracy.high - iv.balanced_accuracy.low

    assert width(2000) < width(100)
