"""fit/decision.py: small-to-large decision accuracy over recipe pairs, its bootstrap interval, per axis."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from fit.decision import decision_accuracy, pairwise_accuracy, recipe_key, small_scale_values


def _key(**levels):
    return recipe_key(levels)


def test_pairwise_accuracy_counts_agreements_and_half_ties():
    assert pairwise_accuracy([1, 2, 3], [10, 20, 30]) == (1.0, 3)
    assert pairwise_accuracy([3, 2, 1], [10, 20, 30]) == (0.0, 3)
    acc, n = pairwise_accuracy([1, 1, 3], [10, 20, 30])  # the (0, 1) pair ties at the small scale
    assert n == 3 and acc == pytest.approx((0.5 + 1 + 1) / 3)
    mask = np.array([[False, True, False], [True, False, False], [False, False, False]])
    assert pairwise_accuracy([1, 2, 3], [20, 10, 30], mask) == (0.0, 1)


def test_decision_accuracy_with_interval_and_per_axis():
    # tools decide the held-out order; the small scale gets tools right but flips the repair pairs
    large, small = {}, {}
    for tools in (4, 40):
        for repair in (0.0, 1.0):
            k = _key(tool_diversity=tools, repair_rate=repair)
            large[k] = tools + repair
            small[k] = tools - repair
    d = decision_accuracy(large, small, source="observed", small_scale="s x 20", higher_is_better=True,
                          n_bootstrap=300, seed=1)
    assert d.recipes == 4 and d.pairs == 6
    # pairs differing in tools agree (4 of them); the two same-tools pairs differ only in repair and disagree
    assert d.accuracy == pytest.approx(4 / 6)
    assert d.per_axis["repair_rate"].pairs == 4 and d.per_axis["repair_rate"].accuracy == pytest.approx(2 / 4)
    assert d.per_axis["tool_diversity"].accuracy == 1.0 and d.per_axis["tool_diversity"].pairs == 4
    assert d.lo <= d.accuracy <= d.hi and 0 <= d.lo and d.hi <= 1 and d.n_bootstrap == 300
    again = decision_accuracy(large, small, source="observed", small_scale="s x 20", higher_is_better=True,
                              n_bootstrap=300, seed=1)
    assert again == d  # seeded
    perfect = decision_accuracy(large, dict(large), source="law", small_scale="law", higher_is_better=False)
    assert perfect.accuracy == perfect.lo == perfect.hi == 1.0


def test_fewer_than_two_recipes_give_no_accuracy():
    k = _key(tool_diversity=4)
    d = decision_accuracy({k: 1.0}, {k: 2.0}, source="observed", small_scale="x", higher_is_better=True)
    assert d.accuracy is None and d.pairs == 0 and d.lo is None


def test_small_scale_values_take_the_largest_fitted_cell_and_average_seeds():
    def run(recipe, size, tpp, flops, split, value, seed=0):
        return SimpleNamespace(recipe=recipe, model_size=size, metadata={"tokens_per_param": tpp}, train_flops=flops,
                               split=split, metrics={"b/bpb": value}, seed=seed)

    a, b = {"tool_diversity": 4.0}, {"tool_diversity": 40.0}
    runs = [run(a, "s", 2, 1e6, "fit", 9.0), run(a, "m", 20, 1e9, "fit", 3.0), run(a, "m", 20, 1e9, "fit", 5.0, 1),
            run(b, "m", 20, 1e9, "fit", 2.0), run(b, "s", 20, 1e8, "fit", 1.0),
            run(a, "l", 20, 1e11, "heldout", 1.5), run(b, "l", 20, 1e11, "heldout", 1.0),
            run({"tool_diversity": 12.0}, "m", 20, 1e9, "fit", 2.5)]  # no held-out run: not a decision
    large, small, label = small_scale_values(runs, "b/bpb")
    assert small == {recipe_key(a): 4.0, recipe_key(b): 2.0} and label == "m x 20"
    assert large == {recipe_key(a): 1.5, recipe_key(b): 1.0}
    assert json.loads(recipe_key(a)) == {"tool_diversity": 4.0}
