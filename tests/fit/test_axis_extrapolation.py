"""fit/axis_extrapolation.py: the error per doubling past an axis's tested maximum, on truths whose answer is known."""

from __future__ import annotations

import numpy as np

from fit.axis_extrapolation import axis_extrapolation_sd
from fit.laws import get_law
from fit.models import LawInput, Points

LAW = get_law("additive", (LawInput(name="N", kind="size", ref=1e5),
                           LawInput(name="tool_diversity", kind="diversity", ref=4.0),
                           LawInput(name="repair_rate", kind="quality", lo=0.0, hi=1.0)))
TRUE = {"S0": 0.6, "A_N": 0.3, "alpha_N": 0.4, "G_tool_diversity": 0.3, "alpha_tool_diversity": 0.7,
        "H_repair_rate": 0.1, "beta_repair_rate": 2.0}


def _points(levels: list[float], score, seed: int = 0, noise: float = 0.01) -> Points:
    """Every tool_diversity level x 3 sizes x 2 repair rates, scores from ``score(X)`` plus noise."""
    rows = [(n, t, q) for n in (1e5, 4e5, 1.6e6) for t in levels for q in (0.0, 1.0)]
    X = {"N": [r[0] for r in rows], "tool_diversity": [r[1] for r in rows], "repair_rate": [r[2] for r in rows]}
    y = score({k: np.array(v) for k, v in X.items()}) + np.random.default_rng(seed).normal(0, noise, len(rows))
    return Points(inputs=X, y=list(y), target="score", split=["fit"] * len(rows),
                  run_ids=[f"r{i}" for i in range(len(rows))], experiment="e", benchmark="b", metric="score")


def test_two_close_top_levels_do_not_divide_the_misfit_by_a_tiny_step() -> None:
    """A Latin hypercube's top levels 30 and 31 are 0.05 doublings apart. The truth is off the law by 0.03 at 31
    only (a lack of fit, not an extrapolation error): held out alone, 31 made that 0.03 / 0.05 = 0.6 score points
    per doubling; held out with the whole top doubling it stays near the misfit itself."""
    def bump(X):
        return LAW.predict(TRUE, X) + 0.03 * (X["tool_diversity"] == 31)

    got = [axis_extrapolation_sd(_points([4, 7, 12, 19, 30, 31], bump, seed=s), LAW,
                                 ["tool_diversity"])["tool_diversity"] for s in range(3)]
    assert max(got) < 0.05, got


def test_a_truth_that_bends_past_the_middle_levels_shows_an_error_per_doubling() -> None:
    """Above 8 tools the truth stops improving; a law fitted up to 8 extrapolates the gain it saw to 32."""
    def bent(X):
        return LAW.predict(TRUE, {**X, "tool_diversity": np.minimum(X["tool_diversity"], 8.0)})

    sd = axis_extrapolation_sd(_points([4, 5, 6, 8, 32], bent), LAW, ["tool_diversity"])["tool_diversity"]
    flat = axis_extrapolation_sd(_points([4, 5, 6, 8, 32], lambda X: LAW.predict(TRUE, X)), LAW,
                                 ["tool_diversity"])["tool_diversity"]
    assert sd > 0.02 and sd > 3 * flat, (sd, flat)


def test_an_axis_without_two_levels_below_half_its_top_is_left_out() -> None:
    pts = _points([12, 19, 30], lambda X: LAW.predict(TRUE, X))
    assert axis_extrapolation_sd(pts, LAW, ["tool_diversity"]) == {}


def _quality_points(levels: list[float], score, seed: int = 0, noise: float = 0.01) -> Points:
    """Every repair_rate level x 3 sizes x 2 tool counts, scores from ``score(X)`` plus noise."""
    rows = [(n, t, q) for n in (1e5, 4e5, 1.6e6) for t in (4.0, 16.0) for q in levels]
    X = {"N": [r[0] for r in rows], "tool_diversity": [r[1] for r in rows], "repair_rate": [r[2] for r in rows]}
    y = score({k: np.array(v) for k, v in X.items()}) + np.random.default_rng(seed).normal(0, noise, len(rows))
    return Points(inputs=X, y=list(y), target="score", split=["fit"] * len(rows),
                  run_ids=[f"r{i}" for i in range(len(rows))], experiment="e", benchmark="b", metric="score")


def test_a_quality_axis_is_checked_past_its_top_fifth() -> None:
    """allocate takes a quality axis past its tested maximum as it does a diversity axis. A truth whose repair
    rate helps more above 0.4 than the law's saturating term allows shows an error per doubling when the law,
    refitted up to 0.8 / 1.25 (levels 0-0.4 here), predicts 0.8; the law's own truth shows about none."""
    def steeper(X):
        return LAW.predict(TRUE, X) + 0.15 * np.maximum(X["repair_rate"] - 0.4, 0.0) / 0.4

    levels = [0.0, 0.1, 0.2, 0.3, 0.4, 0.8]
    sd = axis_extrapolation_sd(_quality_points(levels, steeper), LAW, ["repair_rate"])["repair_rate"]
    flat = [axis_extrapolation_sd(_quality_points(levels, lambda X: LAW.predict(TRUE, X), seed=s), LAW,
                                  ["repair_rate"])["repair_rate"] for s in range(3)]
    assert sd > 0.02 and sd > 3 * max(flat) and max(flat) < 0.02, (sd, flat)


def test_a_quality_axis_keeps_all_but_its_top_fifth_in_the_refit() -> None:
    """Levels 0.1-1.0: the refit keeps those up to 0.8 (not up to 0.5, as a diversity axis's top doubling would),
    so a truth that turns only between 0.5 and 0.8 is fitted, not extrapolated, and shows no error past 0.8."""
    def turns(X):
        return LAW.predict(TRUE, X) + 0.1 * np.clip(X["repair_rate"] - 0.5, 0.0, 0.3)

    levels = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0]
    sd = axis_extrapolation_sd(_quality_points(levels, turns), LAW, ["repair_rate"])["repair_rate"]
    assert sd < 0.03, sd
