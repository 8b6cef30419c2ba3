"""Bootstrap: seeded, independent of the worker count, intervals that cover the truth."""

from __future__ import annotations

import numpy as np
import pytest

from fit.bootstrap import bootstrap_draws, param_intervals, prediction_interval
from fit.fitting import fit_law
from fit.laws import get_law
from fit.models import Points


@pytest.fixture
def loss_points() -> Points:
    rng = np.random.default_rng(0)
    N = np.repeat(np.geomspace(1e7, 1e10, 6), 5)
    D = np.tile(np.geomspace(1e9, 1e12, 5), 6)
    truth = {"E": 1.7, "A": 400.0, "alpha": 0.34, "B": 1500.0, "beta": 0.3}
    y = get_law("chinchilla").predict(truth, {"N": N, "D": D}) * np.exp(rng.normal(0, 0.01, N.size))
    return Points(inputs={"N": list(N), "D": list(D)}, y=list(y), target="loss")


def test_draws_are_seeded_and_do_not_depend_on_workers(loss_points):
    law = get_law("chinchilla")
    fit = fit_law(loss_points, law, n_starts=4)
    serial = bootstrap_draws(loss_points, law, fit.params, n_bootstrap=30, seed=7, n_jobs=1)
    parallel = bootstrap_draws(loss_points, law, fit.params, n_bootstrap=30, seed=7, n_jobs=2)
    again = bootstrap_draws(loss_points, law, fit.params, n_bootstrap=30, seed=7, n_jobs=1)
    other = bootstrap_draws(loss_points, law, fit.params, n_bootstrap=30, seed=8, n_jobs=1)
    assert len(serial) == 30
    for a, b in zip(serial, parallel):
        assert a == pytest.approx(b, rel=1e-9)
    assert serial == again and serial != other


def test_intervals_cover_the_truth_and_prediction_intervals_widen_with_noise(loss_points):
    law = get_law("chinchilla")
    fit = fit_law(loss_points, law, n_starts=4, n_bootstrap=40, seed=1, n_jobs=1)
    for name, true in (("alpha", 0.34), ("beta", 0.3), ("E", 1.7)):
        iv = fit.intervals[name]
        assert iv.lo <= true <= iv.hi, (name, iv)
    X = {"N": np.array([3e10]), "D": np.array([3e12])}
    pred, lo, hi = prediction_interval(fit, law, X, level=0.9)
    assert lo[0] < pred[0] < hi[0]
    noisy = fit.model_copy(update={"residual_sd": fit.residual_sd * 5})
    _, lo2, hi2 = prediction_interval(noisy, law, X, level=0.9)
    assert hi2[0] - lo2[0] > 2 * (hi[0] - lo[0])


def test_param_intervals_are_percentiles():
    draws = [{"a": float(v)} for v in range(101)]
    iv = param_intervals({"a": 50.0}, draws, level=0.9)["a"]
    assert (iv.lo, iv.hi, iv.estimate) == pytest.approx((5.0, 95.0, 50.0))
    assert param_intervals({"a": 1.0}, []) == {}
