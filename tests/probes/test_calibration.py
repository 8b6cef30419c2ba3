from __future__ import annotations

import math

import numpy as np
import pytest

from probes.calibration import best_threshold, calibrate, confusion, roc_auc, split_groups, verdicts


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
