"""fit/decision.py: small-to-large decision accuracy over recipe pairs, Wilson intervals, close pairs, per axis,
and the accuracy-against-compute curve."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from fit.decision import (compute_curve, decision_accuracy, pairwise_accuracy, pooled_seed_sd, recipe_key,
                          small_scale_values, wilson, _size_label)


def _key(**levels):
    return recipe_key(levels)


def test_pairwise_accuracy_counts_agreements_and_half_ties():
    assert pairwise_accuracy([1, 2, 3], [10, 20, 30]) == (1.0, 3)
    assert pairwise_accuracy([3, 2, 1], [10, 20, 30]) == (0.0, 3)
    acc, n = pairwise_accuracy([1, 1, 3], [10, 20, 30])  # the (0, 1) pair ties at the small scale
    assert n == 3 and acc == pytest.approx((0.5 + 1 + 1) / 3)
    mask = np.array([[False, True, False], [True, False, False], [False, False, False]])
    assert pairwise_accuracy([1, 2, 3], [20, 10, 30], mask) == (0.0, 1)


def test_wilson_interval_matches_the_formula_and_does_not_collapse_on_a_perfect_score():
    lo, hi = wilson(15, 15, 0.90)
    assert hi == pytest.approx(1.0) and 0.8 < lo < 0.9  # z = 1.645: 15 of 15 still leaves ~15% below 1
    lo, hi = wilson(8, 10, 0.95)
    assert (lo, hi) == pytest.approx((0.4902, 0.9433), abs=1e-4)  # the textbook value for 8 of 10
    assert wilson(0, 0) == (None, None)
    lo1, hi1 = wilson(3, 6)
    lo2, hi2 = wilson(30, 60)
    assert hi2 - lo2 < hi1 - lo1  # more pairs, narrower


def test_decision_accuracy_with_interval_and_per_axis():
    # tools decide the held-out order; the small scale gets tools right but flips the repair pairs
    large, small = {}, {}
    for tools in (4, 40):
        for repair in (0.0, 1.0):
            k = _key(tool_diversity=tools, repair_rate=repair)
            large[k] = tools + repair
            small[k] = tools - repair
    d = decision_accuracy(large, small, source="observed", small_scale="s x 20", higher_is_better=True)
    assert d.recipes == 4 and d.pairs == 6 and d.interval == "wilson"
    # pairs differing in tools agree (4 of them); the two same-tools pairs differ only in repair and disagree
    assert d.accuracy == pytest.approx(4 / 6)
    assert (d.lo, d.hi) == pytest.approx(wilson(4, 6, 0.90))
    assert d.per_axis["repair_rate"].pairs == 4 and d.per_axis["repair_rate"].accuracy == pytest.approx(2 / 4)
    assert d.per_axis["tool_diversity"].accuracy == 1.0 and d.per_axis["tool_diversity"].pairs == 4
    perfect = decision_accuracy(large, dict(large), source="law", small_scale="law", higher_is_better=False)
    assert perfect.accuracy == 1.0 and perfect.lo < 1.0  # a perfect score is not a [1, 1] interval
    # without a seed SD there are no close pairs; with one, only pairs within 2 SDs at the small scale count
    assert d.close_pairs == 0 and d.close_accuracy is None
    c = decision_accuracy(large, small, source="observed", small_scale="x", higher_is_better=True, seed_sd=0.4)
    # differences at the small scale: the two repair pairs differ by 1 (> 2 x 0.4), the tools pairs by 35-37
    assert c.close_pairs == 0
    c = decision_accuracy(large, small, source="observed", small_scale="x", higher_is_better=True, seed_sd=1.0)
    assert c.close_pairs == 2 and c.close_accuracy == 0.0 and c.close_hi < 1.0


def test_close_pairs_of_the_law_are_the_observed_ones():
    a, b, c = _key(t=1), _key(t=2), _key(t=3)
    large = {a: 1.0, b: 2.0, c: 3.0}
    observed = {a: 1.0, b: 1.1, c: 5.0}  # a and b are close at the fitted size
    law = {a: 2.0, b: 1.0, c: 3.0}  # the law flips the close pair
    d = decision_accuracy(large, law, source="law", small_scale="law", higher_is_better=True, seed_sd=0.1,
                          closeness=observed)
    assert d.close_pairs == 1 and d.close_accuracy == 0.0 and d.accuracy == pytest.approx(2 / 3)


def test_fewer_than_two_recipes_give_no_accuracy():
    k = _key(tool_diversity=4)
    d = decision_accuracy({k: 1.0}, {k: 2.0}, source="observed", small_scale="x", higher_is_better=True)
    assert d.accuracy is None and d.pairs == 0 and d.lo is None


def test_pooled_seed_sd_pools_within_recipe_spread():
    assert pooled_seed_sd({"a": [1.0, 3.0], "b": [5.0], "c": [2.0, 2.0, 2.0]}) == pytest.approx(np.sqrt(2.0 / 3))
    assert pooled_seed_sd({"a": [1.0], "b": [2.0]}) is None


def _run(recipe, size, tpp, flops, split, value, seed=0, rid=None):
    return SimpleNamespace(run_id=rid or f"{size}-{tpp}-{json.dumps(recipe)}-{seed}", recipe=recipe, model_size=size,
                           metadata={"tokens_per_param": tpp}, train_flops=flops, split=split,
                           metrics={"b/bpb": value}, seed=seed)


def test_small_scale_values_take_the_largest_fitted_cell_and_average_seeds():
    a, b = {"tool_diversity": 4.0}, {"tool_diversity": 40.0}
    runs = [_run(a, "s", 2, 1e6, "fit", 9.0), _run(a, "m", 20, 1e9, "fit", 3.0), _run(a, "m", 20, 1e9, "fit", 5.0, 1),
            _run(b, "m", 20, 1e9, "fit", 2.0), _run(b, "s", 20, 1e8, "fit", 1.0),
            _run(a, "l", 20, 1e11, "heldout", 1.5), _run(b, "l", 20, 1e11, "heldout", 1.0),
            _run({"tool_diversity": 12.0}, "m", 20, 1e9, "fit", 2.5)]  # no held-out run: not a decision
    large, small, label, sd = small_scale_values(runs, "b/bpb")
    assert small == {recipe_key(a): 4.0, recipe_key(b): 2.0} and label == "m x 20"
    assert large == {recipe_key(a): 1.5, recipe_key(b): 1.0}
    assert sd == pytest.approx(np.sqrt(2.0))  # recipe a ran seeds 3.0 and 5.0 at m
    assert json.loads(recipe_key(a)) == {"tool_diversity": 4.0}
    # the fit's own target (e.g. the envelope) replaces the stored metric
    values = {r.run_id: (0.0 if r.split == "fit" and r.recipe == b else 9.0) for r in runs}
    _, small2, _, _ = small_scale_values(runs, "b/bpb", values)
    assert small2 == {recipe_key(a): 9.0, recipe_key(b): 0.0}


def test_compute_curve_scores_each_fitted_rung_against_the_heldout_one():
    recipes = [{"t": float(t)} for t in (1, 2, 3, 4)]
    truth = [4.0, 3.0, 2.0, 1.0]
    runs = []
    for r, v in zip(recipes, truth):
        runs.append(_run(r, "xs", 6, 1e6, "fit", -v))  # the smallest rung orders every pair backwards
        runs.append(_run(r, "s", 6, 1e7, "fit", v + (1.5 if r["t"] == 2 else 0.0)))  # flips the (1, 2) pair
        runs.append(_run(r, "m", 6, 1e8, "fit", v))
        runs.append(_run(r, "l", 6, 1e10, "heldout", v))
    curve = compute_curve(runs, "b/bpb")
    assert [p.model_size for p in curve] == ["xs", "s", "m"]
    assert [p.accuracy for p in curve] == pytest.approx([0.0, 5 / 6, 1.0])
    assert all(p.pairs == 6 and p.lo <= p.accuracy <= p.hi for p in curve)


def test_one_size_written_two_ways_is_one_cell():
    """lm-eval's reader labels a size 7e+07 and a W&B table 70M: one cell, not two."""
    a, b = {"tool_diversity": 4.0}, {"tool_diversity": 40.0}
    runs = [_run(a, "70M", 20, 1e9, "fit", 3.0), _run(b, "7e+07", 20, 1e9, "fit", 2.0),
            _run(a, "1B", 20, 1e11, "heldout", 1.5), _run(b, "1B", 20, 1e11, "heldout", 1.0)]
    large, small, label, _ = small_scale_values(runs, "b/bpb")
    assert small == {recipe_key(a): 3.0, recipe_key(b): 2.0} and label.startswith("7e+07")
    assert _size_label("p-s") == "p-s" and _size_label("1.4B") == _size_label("1.4e9") == "1.4e+09"
