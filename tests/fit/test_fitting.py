"""fit_law: every registered law recovers known parameters from simulated data; bad input fails clearly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fit.errors import FitError, FitInputError
from fit.fitting import fit_law, huber
from fit.laws import get_law
from fit.models import LawInput, Points

FAST = {"n_starts": 4, "max_grid": 512}


def _all_fit(points: Points) -> Points:
    return points.model_copy(update={"split": ["fit"] * points.n})


@pytest.mark.parametrize("name", ["additive", "multiplicative"])
def test_hypothesis_laws_recover_parameters(sim, truths, name):
    runs = sim.design_runs(n_points=40, seed=0)
    pts = _all_fit(sim.simulated_points(name, truths[name], runs, noise=0.005, seed=2))
    law = get_law(name, sim.small_inputs())
    fit = fit_law(pts, law, **FAST)
    assert fit.converged, fit.message
    assert not fit.fixed  # three sizes fitted: the size exponent is estimated
    truth = truths[name]
    for p in ("S0", "A_N", "alpha_N", "G_tool_diversity", "G_task_count"):
        assert fit.params[p] == pytest.approx(truth[p], rel=0.25, abs=0.03), p
    pred = law.predict(fit.params, pts.X())
    true = law.predict(truth, pts.X())
    assert np.abs(pred - true).max() < 0.01
    assert fit.residual_sd == pytest.approx(0.005, rel=0.3)


def test_interaction_law_recovers_kappa(sim, truths):
    runs = sim.design_runs(n_points=40, seed=3)
    truth = {**truths["additive"], "kappa": 4.0}
    law = get_law("interaction", sim.small_inputs())
    from fit.models import Truth
    from fit.simulate import simulate_results

    y = simulate_results(runs, Truth(law="interaction", params=truth, noise_sd=0.003), law, seed=1)
    X = {a: [r.model_params if a == "N" else r.recipe[a] for r in runs] for a in law.axes}
    fit = fit_law(Points(inputs=X, y=y), law, **FAST)
    assert fit.params["kappa"] == pytest.approx(4.0, rel=0.35)
    assert np.abs(law.predict(fit.params, X) - law.predict(truth, X)).max() < 0.01


def test_saturating_recovers_parameters(sim):
    runs = sim.design_runs(n_points=30, seed=4)
    law = get_law("saturating", sim.small_inputs())
    truth = {"S_max": 0.8, "A_N": 0.2, "alpha_N": 0.5, "A_tool_diversity": 0.1, "alpha_tool_diversity": 0.7,
             "A_task_count": 0.15, "alpha_task_count": 0.4, "A_repair_rate": 0.08, "alpha_repair_rate": 2.0,
             "A_support_depth": 0.05, "alpha_support_depth": 1.5}
    X = {a: np.array([r.model_params if a == "N" else r.recipe[a] for r in runs]) for a in law.axes}
    y = law.predict(truth, X) + np.random.default_rng(0).normal(0, 0.003, len(runs))
    fit = fit_law(Points(inputs={k: list(v) for k, v in X.items()}, y=list(y)), law, **FAST)
    assert fit.converged
    for p in ("alpha_N", "A_N", "alpha_task_count"):
        assert fit.params[p] == pytest.approx(truth[p], rel=0.25), p


def test_chinchilla_recovers_synthetic_parameters():
    rng = np.random.default_rng(0)
    N = np.repeat(np.geomspace(1e7, 1e10, 6), 6)
    D = np.tile(np.geomspace(1e9, 1e12, 6), 6)
    truth = {"E": 1.7, "A": 400.0, "alpha": 0.34, "B": 1500.0, "beta": 0.3}
    law = get_law("chinchilla")
    y = law.predict(truth, {"N": N, "D": D}) * np.exp(rng.normal(0, 0.002, N.size))
    fit = fit_law(Points(inputs={"N": list(N), "D": list(D)}, y=list(y), target="loss"), law)
    for p in ("E", "alpha", "beta"):
        assert fit.params[p] == pytest.approx(truth[p], rel=0.05), p


def test_two_step_fits_each_stage_on_observed_data():
    rng = np.random.default_rng(1)
    N = np.repeat(np.geomspace(1e7, 1e10, 5), 5)
    D = np.tile(np.geomspace(1e9, 1e12, 5), 5)
    law = get_law("two_step")
    truth = {"E": 1.7, "A": 400.0, "alpha": 0.34, "B": 1500.0, "beta": 0.3, "lo": 0.05, "hi": 0.85, "k": 3.0,
             "L0": 2.4}
    loss = get_law("chinchilla").predict({k: truth[k] for k in ("E", "A", "alpha", "B", "beta")}, {"N": N, "D": D})
    loss = loss * np.exp(rng.normal(0, 0.002, N.size))
    acc = get_law("sigmoid").predict({k: truth[k] for k in ("lo", "hi", "k", "L0")}, {"L": loss})
    acc = acc + rng.normal(0, 0.003, N.size)
    pts = Points(inputs={"N": list(N), "D": list(D), "L": list(loss)}, y=list(acc))
    fit = fit_law(pts, law, **FAST)
    assert fit.converged, fit.message
    assert fit.params["alpha"] == pytest.approx(0.34, rel=0.1)
    assert fit.params["L0"] == pytest.approx(2.4, rel=0.05)
    pred = law.predict(fit.params, {"N": N, "D": D})  # chained: needs no observed loss
    assert np.abs(pred - acc).max() < 0.03


def test_two_sizes_fix_the_size_exponent_and_say_so(sim, truths):
    runs = sim.design_runs(n_points=30, seed=5)
    pts = sim.simulated_points("additive", truths["additive"], runs, noise=0.01)
    fit = fit_law(pts, get_law("additive", sim.small_inputs()), n_bootstrap=12, n_jobs=1, **FAST)
    assert fit.fixed == {"alpha_N": 0.5} and fit.params["alpha_N"] == 0.5
    assert "not identifiable from 2 model sizes" in fit.message
    drawn = [d["alpha_N"] for d in fit.bootstrap]
    assert min(drawn) >= 0.2 and max(drawn) <= 0.8 and np.std(drawn) > 0.05
    assert fit.n_params == get_law("additive", sim.small_inputs()).n_params - 1


def test_huber_is_quadratic_then_linear():
    r = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    assert np.allclose(huber(r, 1.0), [2.5, 0.125, 0.0, 0.125, 2.5])


def test_data_hash_and_result_roundtrip(sim, truths):
    from fit.models import FitResult

    pts = _all_fit(sim.simulated_points("additive", truths["additive"], sim.design_runs(20, seed=6)))
    fit = fit_law(pts, get_law("additive", sim.small_inputs()), **FAST)
    assert fit.data_hash == pts.data_hash() and len(fit.data_hash) == 16
    again = FitResult.model_validate(fit.model_dump(mode="json"))
    assert again == fit
    assert math.isfinite(fit.aic) and fit.bic > fit.aic  # ln(60) > 2


# ---- bad input -----------------------------------------------------------------------------------
def test_too_few_runs_says_how_many(sim):
    law = get_law("chinchilla")
    pts = Points(inputs={"N": [1e8, 2e8, 3e8], "D": [1e9, 2e9, 4e9]}, y=[3.0, 2.9, 2.8], target="loss")
    with pytest.raises(FitInputError, match="needs at least 6 fitted runs; got 3"):
        fit_law(pts, law)


def test_non_finite_score_is_named(sim, truths):
    pts = _all_fit(sim.simulated_points("additive", truths["additive"], sim.design_runs(20)))
    y = list(pts.y)
    y[3] = float("nan")
    with pytest.raises(FitInputError, match=r"non-finite value nan for r1-0"):
        fit_law(pts.model_copy(update={"y": y}), get_law("additive", sim.small_inputs()))


def test_out_of_range_score_and_wrong_target(sim, truths):
    pts = _all_fit(sim.simulated_points("additive", truths["additive"], sim.design_runs(20)))
    y = list(pts.y)
    y[0] = 37.0
    with pytest.raises(FitInputError, match="fits a score in \\[0, 1\\]; got 37.0"):
        fit_law(pts.model_copy(update={"y": y}), get_law("additive", sim.small_inputs()))
    with pytest.raises(FitInputError, match="fits a loss, but the points hold a score"):
        fit_law(pts, get_law("chinchilla"))


def test_single_level_axis_is_rejected(sim, truths):
    pts = _all_fit(sim.simulated_points("additive", truths["additive"], sim.design_runs(20)))
    inputs = dict(pts.inputs)
    inputs["repair_rate"] = [0.5] * pts.n
    with pytest.raises(FitInputError, match="axis 'repair_rate' has a single level"):
        fit_law(pts.model_copy(update={"inputs": inputs}), get_law("additive", sim.small_inputs()))


def test_unconverged_fit_is_reported_with_diagnostics(sim, truths):
    pts = _all_fit(sim.simulated_points("multiplicative", truths["multiplicative"], sim.design_runs(20)))
    law = get_law("multiplicative", sim.small_inputs())
    from fit.fitting import fit_params

    opt = fit_params(law, pts.X(), pts.y_array(), n_starts=1, max_grid=4, maxiter=2)
    assert not opt.converged and "did not converge" in opt.message
    with pytest.raises(FitError, match="did not converge"):
        fit_law(pts, law, n_starts=1, max_grid=4, maxiter=2, require_convergence=True)


def test_single_fitted_size_suggests_holdout_none(sim, truths):
    runs = sim.design_runs(n_points=20, seed=8, sizes=sim.SIZES[:2])  # the larger rung is held out
    pts = sim.simulated_points("additive", truths["additive"], runs)
    with pytest.raises(FitInputError, match="single model size .* use --holdout none"):
        fit_law(pts, get_law("additive", sim.small_inputs()))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("name", ["additive", "multiplicative"])
def test_recovery_over_many_seeds(sim, truths, name, seed):
    runs = sim.design_runs(n_points=40, seed=seed)
    pts = _all_fit(sim.simulated_points(name, truths[name], runs, noise=0.01, seed=seed))
    law = get_law(name, sim.small_inputs())
    fit = fit_law(pts, law, n_starts=8)
    assert np.abs(law.predict(fit.params, pts.X()) - law.predict(truths[name], pts.X())).max() < 0.02
    assert fit.params["alpha_N"] == pytest.approx(truths[name]["alpha_N"], abs=0.15)


def test_residual_scale_follows_the_metric():
    from fit.fitting import choose_residual_scale
    from fit.laws import get_law

    law = get_law("saturating", (LawInput(name="N", kind="size", ref=1e6),))
    small = choose_residual_scale(law, np.array([0.005, 0.01, 0.02, 0.03]))
    assert small.residual_scale == "log" and small.huber_delta == pytest.approx(
        0.25 * np.std(np.log([0.005, 0.01, 0.02, 0.03]), ddof=1))
    ordinary = choose_residual_scale(law, np.array([0.2, 0.4, 0.6]))
    assert ordinary.residual_scale == "relative" and ordinary.residual_unit == pytest.approx(0.2)
    assert ordinary.huber_delta == 0.25
    assert choose_residual_scale(law, np.array([0.2, 0.4, 0.6]), huber_delta=0.1).huber_delta == 0.1
    loss = get_law("chinchilla")
    assert choose_residual_scale(loss, np.array([2.0, 3.0])) is loss


def test_small_positive_metric_fits_on_log_residuals_and_recovers_the_law():
    from fit.laws import get_law

    law = get_law("saturating", (LawInput(name="N", kind="size", ref=1e6),))
    n = np.repeat([1e6, 4e6, 1.6e7, 6.4e7], 6)
    truth = {"S_max": 0.035, "A_N": 0.03, "alpha_N": 0.5}
    rng = np.random.default_rng(0)
    y = law.predict(truth, {"N": n}) * np.exp(rng.normal(0, 0.05, n.size))
    fit = fit_law(Points(inputs={"N": list(n)}, y=list(y)), law, n_starts=4)
    assert fit.residual_scale == "log" and fit.residual_sd == pytest.approx(0.05, rel=0.35)
    assert fit.params["alpha_N"] == pytest.approx(0.5, abs=0.15)


def test_lack_of_fit_is_flagged_when_the_form_misses_structure():
    from fit.laws import get_law

    law = get_law("saturating", (LawInput(name="N", kind="size", ref=1e6),))
    n = np.repeat([1e6, 2e6, 4e6, 8e6, 1.6e7, 3.2e7], 4)
    groups = [f"g{v:g}" for v in n]
    rng = np.random.default_rng(1)
    smooth = law.predict({"S_max": 0.8, "A_N": 0.4, "alpha_N": 0.5}, {"N": n})
    noise = rng.normal(0, 0.004, n.size)
    good = fit_law(Points(inputs={"N": list(n)}, y=list(smooth + noise), groups=groups), law, n_starts=4)
    assert good.lack_of_fit is not None and not good.lack_of_fit.flagged
    assert good.lack_of_fit.df_pure == 18 and good.lack_of_fit.df_lack == 3
    wiggle = smooth + 0.03 * np.sin(np.log2(n)) + noise  # structure no saturating power law has
    bad = fit_law(Points(inputs={"N": list(n)}, y=list(wiggle), groups=groups), law, n_starts=4)
    assert bad.lack_of_fit.flagged and bad.lack_of_fit.ratio > 2 and bad.lack_of_fit.p_value < 1e-3


def test_a_single_token_count_names_the_law_that_fits_without_it():
    """An lm-eval folder where every model stops at the same step has one D: the refusal says what to do."""
    from fit.models import Points

    n = [1e8, 2e8, 4e8, 8e8, 1.6e9, 3.2e9, 6.4e9]
    pts = Points(inputs={"N": n, "D": [8e9] * len(n)}, y=[3.0 - 0.1 * i for i in range(len(n))], target="loss")
    with pytest.raises(FitInputError, match=r"axis 'D' has a single level \(8e\+09\).*fit a law without D "
                                            r"\(e\.g\. --law saturating\) or import runs at 2\+ token counts"):
        fit_law(pts, get_law("chinchilla"))
