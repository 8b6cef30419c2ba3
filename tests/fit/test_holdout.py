"""Held-out rule resolution (stored split vs recomputed) and held-out metrics."""

from __future__ import annotations

import numpy as np
import pytest

from fit.errors import FitInputError
from fit.fitting import fit_law
from fit.holdout import apply_holdout, heldout_metrics, parse_holdout
from fit.laws import get_law
from fit.models import Points


def _pts(split=None, flops=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)):
    n = len(flops)
    return Points(inputs={"N": [1.0] * n}, y=[0.5] * n, run_ids=[f"r{i}" for i in range(n)],
                  split=split or [], flops=list(flops))


@pytest.mark.parametrize("rule,expected", [("top-flops:0.25", ("top-flops", 0.25)), ("none", ("none", None)),
                                           ("split", ("split", None)), ("top-flops:0", ("top-flops", 0.0))])
def test_parse_holdout(rule, expected):
    assert parse_holdout(rule) == expected


@pytest.mark.parametrize("rule", ["top-flops", "top-flops:1.5", "bottom:0.2", "0.25", "top-flops:-0.1"])
def test_parse_holdout_rejects_bad_rules(rule):
    with pytest.raises(FitInputError, match="--holdout"):
        parse_holdout(rule)


def test_stored_split_wins_when_the_fraction_matches():
    stored = ["heldout", "fit", "fit", "fit", "fit", "fit", "fit", "fit"]  # not the top FLOPs: stored decides
    pts, source = apply_holdout(_pts(stored), "top-flops:0.25", stored_fraction=0.25)
    assert pts.split == stored and source == "stored split column"


def test_other_fraction_recomputes_over_done_runs():
    stored = ["heldout"] + ["fit"] * 7
    pts, source = apply_holdout(_pts(stored), "top-flops:0.5", stored_fraction=0.25)
    assert source == "recomputed over done runs"
    assert pts.split == ["fit"] * 4 + ["heldout"] * 4


def test_nothing_stored_recomputes_and_none_fits_everything():
    pts, source = apply_holdout(_pts(), "top-flops:0.25", stored_fraction=0.25)
    assert pts.split[-2:] == ["heldout", "heldout"] and source == "recomputed over done runs"
    pts, source = apply_holdout(_pts(["heldout"] * 8), "none")
    assert set(pts.split) == {"fit"} and source == "none"
    pts, source = apply_holdout(_pts(["fit"] * 7 + ["heldout"]), "split")
    assert pts.split[-1] == "heldout" and source == "stored split column"


def test_recompute_needs_flops():
    pts = Points(inputs={"N": [1.0, 2.0]}, y=[0.1, 0.2])
    with pytest.raises(FitInputError, match="needs the training FLOPs"):
        apply_holdout(pts, "top-flops:0.3", stored_fraction=None)


def test_heldout_metrics_on_a_known_law():
    law = get_law("chinchilla")
    truth = {"E": 1.8, "A": 400.0, "alpha": 0.34, "B": 2000.0, "beta": 0.36}
    N = np.repeat(np.geomspace(1e7, 1e9, 5), 4)
    D = np.tile(np.geomspace(1e9, 1e11, 4), 5)
    flops = 6 * N * D
    split = ["heldout" if f >= np.sort(flops)[-4] else "fit" for f in flops]
    y = law.predict(truth, {"N": N, "D": D})
    y = y + np.where(np.array(split) == "heldout", 0.01, 0.0)  # held-out runs sit 0.01 above the law
    pts = Points(inputs={"N": list(N), "D": list(D)}, y=list(y), target="loss", split=split, flops=list(flops),
                 run_ids=[f"r{i}" for i in range(N.size)])
    fit = fit_law(pts, law, n_starts=4)
    h = fit.heldout
    assert h is not None and h.n == 4
    assert h.mae == pytest.approx(0.01, abs=2e-3) and h.max_error == pytest.approx(0.01, abs=3e-3)
    fitted_max = max(f for f, s in zip(flops, split) if s == "fit")
    assert h.extrapolation_factor == pytest.approx(flops.max() / fitted_max)
    assert h.interval_coverage is None  # no bootstrap, no intervals
    again = heldout_metrics(fit, law, pts.subset(np.array(split) == "heldout"), train_flops=[fitted_max])
    assert again.mae == pytest.approx(h.mae)


def test_heldout_error_on_seed_means_is_choshens_are_over_recipes():
    import numpy as np

    from fit.holdout import seed_mean_error

    y = np.array([2.0, 2.2, 4.0, 4.4, 4.2])  # recipe a: 2 seeds, recipe b: 3 seeds
    pred = np.array([2.0, 2.0, 4.4, 4.4, 4.4])
    are, n = seed_mean_error(y, pred, ["a", "a", "b", "b", "b"])
    assert n == 2
    assert are == pytest.approx((abs(2.0 - 2.1) / 2.1 + abs(4.4 - 4.2) / 4.2) / 2)
    # one run per recipe: the per-run ARE
    are1, n1 = seed_mean_error(y, pred, ["1", "2", "3", "4", "5"])
    assert n1 == 5 and are1 == pytest.approx(np.mean(np.abs(pred - y) / y))
