"""Rolling validation: fit the K smallest model sizes, predict the next one, stepping up the ladder."""

from __future__ import annotations

import pytest

from fit.errors import FitInputError
from fit.holdout import apply_holdout, parse_holdout
from fit.laws import get_law
from fit.rolling import rolling_steps

SIZES4 = [(2.6e5, 8.2e5), (1.3e6, 1.2e6), (6.8e6, 3.9e6), (3.4e7, 1.2e7)]


def test_steps_predict_each_rung_from_the_smaller_ones(sim, truths):
    runs = sim.design_runs(n_points=16, seed=3, sizes=SIZES4)
    pts = sim.simulated_points("additive", truths["additive"], runs, noise=0.005, seed=2)
    steps = rolling_steps(pts, get_law("additive", sim.small_inputs()), 2, n_starts=4, max_grid=512)
    assert [s.predicted_size for s in steps] == [6.8e6, 3.4e7]
    assert [s.fit_sizes for s in steps] == [[2.6e5, 1.3e6], [2.6e5, 1.3e6, 6.8e6]]
    assert all(s.n == 16 for s in steps)
    # the truth is the fitted form, so each step predicts close to the noise; 3 fitted sizes identify alpha_N
    assert steps[1].mae < 0.02 and all(s.relative_mae < 0.1 for s in steps)


def test_rungs_rule_holds_out_the_largest_size_and_refuses_too_few_sizes(sim, truths):
    runs = sim.design_runs(n_points=4, seed=3)
    pts = sim.simulated_points("additive", truths["additive"], runs, noise=0.005, seed=2)
    assert parse_holdout("rungs:2") == ("rungs", 2.0)
    held, source = apply_holdout(pts, "rungs:2")
    assert source.startswith("rolling over 3 model sizes")
    assert {n for n, s in zip(held.inputs["N"], held.split) if s == "heldout"} == {6.8e6}
    with pytest.raises(FitInputError, match=r"--holdout rungs:3 needs at least 4 model sizes .* the runs have 3"):
        apply_holdout(pts, "rungs:3")
    with pytest.raises(FitInputError, match="rungs:1 fits a single model size"):
        rolling_steps(pts, get_law("additive", sim.small_inputs()), 1)
    with pytest.raises(FitInputError, match="rungs:K"):
        parse_holdout("rungs:x")
