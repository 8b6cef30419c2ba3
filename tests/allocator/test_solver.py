"""Solver invariants (budget, monotonicity, determinism), regret on known truths, KKT check, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from allocator.errors import AllocatorError
from allocator.models import AllocationRequest, AxisBounds, AxisCost, Budget, CostModel
from allocator.solver import Surface, min_cost, solve, solve_levels

AXES = [
    AxisBounds(name="tool_diversity", kind="diversity", unit="tools", lower=4, upper=160, fitted_min=4,
               fitted_max=40, baseline=4),
    AxisBounds(name="task_count", kind="diversity", unit="tasks", lower=64, upper=4096, fitted_min=64,
               fitted_max=1024, baseline=64),
    AxisBounds(name="repair_rate", kind="quality", unit="fraction", lower=0.0, upper=1.0, fitted_min=0.0,
               fitted_max=1.0, log=False, baseline=0.0),
]
COST = CostModel(unit="usd", axes=[AxisCost(name="tool_diversity", per_unit=150.0),
                                   AxisCost(name="task_count", per_unit=0.8),
                                   AxisCost(name="repair_rate", per_unit=1.2, scales_with="task_count")])


def multiplicative(levels, n):
    q = 0.4 + 0.6 * levels["repair_rate"]
    return 0.9 - 0.5 * levels["tool_diversity"] ** -0.5 / q - 0.3 * levels["task_count"] ** -0.4


def additive(levels, n):
    return (0.9 - 0.4 * levels["tool_diversity"] ** -0.45 - 0.3 * levels["task_count"] ** -0.35
            - 0.08 * (1.0 - levels["repair_rate"]) ** 2)


def _request(budget: float, **kw) -> AllocationRequest:
    return AllocationRequest(budget=Budget(value=budget), benchmark="b", model_params=1e6, axes=AXES, cost=COST, **kw)


@pytest.mark.parametrize("truth", [multiplicative, additive])
def test_never_over_budget_and_monotone_in_budget(truth) -> None:
    scores, warm = [], []
    for budget in np.geomspace(1000, 40000, 5):
        plan = solve(_request(float(budget)), Surface(score=truth), warm=warm)
        assert plan.plan.total_cost <= budget * (1 + 1e-9)
        scores.append(plan.plan.predicted_score)
        warm = [plan.plan.levels]
    assert all(b >= a - 1e-9 for a, b in zip(scores, scores[1:])), scores


def test_same_inputs_same_plan() -> None:
    a = solve(_request(5000), Surface(score=multiplicative))
    b = solve(_request(5000), Surface(score=multiplicative))
    assert a.model_dump() == b.model_dump()


def _brute_force(truth, budget: float, n: int = 70) -> float:
    grids = [np.geomspace(4, 160, n), np.geomspace(64, 4096, n), np.linspace(0, 1, n)]
    t, k, r = (g.ravel() for g in np.meshgrid(*grids, indexing="ij"))
    levels = {"tool_diversity": t, "task_count": k, "repair_rate": r}
    cost = 150 * t + 0.8 * k + 1.2 * r * k
    s = truth(levels, 1e6)
    return float(np.max(np.where(cost <= budget, s, -np.inf)))


@pytest.mark.parametrize("truth", [multiplicative, additive])
@pytest.mark.parametrize("budget", [3000.0, 12000.0])
def test_regret_under_one_percent_of_the_gain(truth, budget: float) -> None:
    plan = solve(_request(budget), Surface(score=truth))
    optimum = max(_brute_force(truth, budget), plan.plan.predicted_score)
    cheapest = truth({a.name: a.lower for a in AXES}, 1e6)
    regret = optimum - truth(plan.plan.levels, 1e6)
    assert regret <= 0.01 * (optimum - cheapest), (regret, optimum - cheapest)


def test_kkt_check_at_the_optimum_and_baseline_is_diversity_only() -> None:
    plan = solve(_request(5000), Surface(score=multiplicative))
    assert plan.optimality.ok
    assert plan.optimality.budget_binding
    assert plan.optimality.max_relative_gap < 0.05
    assert plan.baseline.levels["repair_rate"] == 0.0
    assert plan.gain_over_baseline > 0
    # a non-optimal point fails the check
    from allocator.solver import check_optimality

    skewed = {"tool_diversity": 4.0, "task_count": (5000 - 600) / (0.8 + 1.2 * 0.5), "repair_rate": 0.5}
    assert not check_optimality(_request(5000), skewed, multiplicative).ok


def test_extrapolation_is_flagged_with_its_factor() -> None:
    plan = solve(_request(60000), Surface(score=multiplicative))
    assert plan.extrapolation
    assert any(v > 1 for v in plan.extrapolation_detail.values())
    small = solve(_request(2000), Surface(score=multiplicative))
    assert not small.extrapolation


def test_bootstrap_draws_give_intervals_and_probability() -> None:
    draws = [lambda lv, n, s=s: multiplicative(lv, n) + s for s in np.linspace(-0.02, 0.02, 21)]
    plan = solve(_request(5000), Surface(score=multiplicative, draws=draws), redraws=5)
    lo, hi = plan.interval
    assert lo < plan.plan.predicted_score < hi
    assert plan.p_beats_baseline == 1.0  # a constant shift never changes the ranking
    assert set(plan.spend_spread) == {"tool_diversity", "task_count", "repair_rate"}


def test_the_regret_bound_is_zero_when_the_draws_agree_on_the_optimum_and_holds_a_rival_optimum() -> None:
    shifts = [lambda lv, n, s=s: multiplicative(lv, n) + s for s in np.linspace(-0.02, 0.02, 11)]
    same = solve(_request(5000), Surface(score=multiplicative, draws=shifts), redraws=11)
    assert same.regret_interval is not None and same.regret_interval[1] < 1e-6  # a shift moves no optimum

    def tilted(k):  # tools worth more or less than the point law says: a different best split
        return lambda lv, n: multiplicative(lv, n) + k * (np.log(lv["tool_diversity"]) - np.log(lv["task_count"]))
    draws = [tilted(k) for k in np.linspace(-0.03, 0.03, 11)]
    plan = solve(_request(5000), Surface(score=multiplicative, draws=draws), redraws=11)
    levels = plan.plan.levels
    worst = max(solve(_request(5000), Surface(score=d)).plan.predicted_score - d(
        {k: np.atleast_1d(v) for k, v in levels.items()}, 1e6)[0] for d in (draws[0], draws[-1]))
    assert worst > 1e-4  # the extreme draws would pick another plan
    lo, hi = plan.regret_interval
    assert 0.0 <= lo <= plan.expected_regret <= hi
    assert hi >= 0.8 * worst  # the bound reaches what the extreme draws leave on the table (90% of 11 draws)


def test_the_rung_cv_effect_error_widens_gain_intervals_only_above_the_fitted_sizes() -> None:
    from dataclasses import replace

    from allocator.solver import with_effect_error

    draws = [lambda lv, n, s=s: multiplicative(lv, n) * s for s in np.linspace(0.97, 1.03, 41)]
    plain = Surface(score=multiplicative, draws=draws, own="x")
    blind = Surface(score=additive)
    base = solve(_request(5000), plain, baseline_surface=blind, redraws=2)
    # the plan is for N = 1e6; fitted up to 1e4: two decades above, 30% relative gain error per decade
    wide = solve(_request(5000), replace(plain, effect_sd=0.3, max_fitted_n=1e4), baseline_surface=blind, redraws=2)
    assert wide.gain_over_baseline == base.gain_over_baseline and wide.plan == base.plan  # point plan unchanged
    w0 = base.gain_interval[1] - base.gain_interval[0]
    w1 = wide.gain_interval[1] - wide.gain_interval[0]
    assert w1 > 3 * w0  # +-1.645 x 0.6 of the gain against the draws' +-3%
    assert wide.interval == base.interval  # the plan's own score interval is not touched
    # at or below the fitted sizes nothing changes, and without draws there is nothing to widen
    same = solve(_request(5000), replace(plain, effect_sd=0.3, max_fitted_n=1e7), baseline_surface=blind, redraws=2)
    assert same.gain_interval == base.gain_interval
    assert with_effect_error([], replace(plain, effect_sd=0.3, max_fitted_n=1.0), 1e6) == []
    # deterministic, and a relative error: a zero gain stays zero
    s = replace(plain, effect_sd=0.3, max_fitted_n=1e4)
    assert with_effect_error([0.1, 0.2], s, 1e6) == with_effect_error([0.1, 0.2], s, 1e6)
    assert with_effect_error([0.0, 0.0], s, 1e6) == [0.0, 0.0]
    # a lone run at 1e6 moved max_fitted_n there; the differences were fitted up to the rung at 1e4 only
    lone = replace(s, max_fitted_n=1e6, max_compared_n=1e4)
    assert with_effect_error([0.1, 0.2], lone, 1e6) == with_effect_error([0.1, 0.2], s, 1e6) != [0.1, 0.2]


def test_budget_below_cheapest_plan_names_the_minimum() -> None:
    req = _request(100.0)
    with pytest.raises(AllocatorError, match=f"cheapest feasible plan \\({min_cost(req):,.2f} usd"):
        solve_levels(req, multiplicative)


@pytest.mark.parametrize("value", [0.0, -5.0, float("nan"), float("inf")])
def test_budget_must_be_positive_and_finite(value: float) -> None:
    with pytest.raises(ValueError):
        Budget(value=value)


INT_AXES = [a.model_copy(update={"integer": True}) if a.kind == "diversity" else a for a in AXES]


def test_integer_axes_are_rounded_within_budget() -> None:
    for budget in (1234.5, 5000.0, 17777.0):
        req = _request(budget).model_copy(update={"axes": INT_AXES})
        plan = solve(req, Surface(score=multiplicative))
        for name in ("tool_diversity", "task_count"):
            assert plan.plan.levels[name] == int(plan.plan.levels[name])
        assert plan.plan.total_cost <= budget * (1 + 1e-9)
        cont = solve_levels(req, multiplicative)
        # rounding costs little: the integer plan keeps >= 99% of the continuous plan's gain over the cheapest plan
        cheapest = multiplicative({a.name: a.lower for a in AXES}, 1e6)
        assert plan.plan.predicted_score - cheapest >= 0.99 * (multiplicative(cont, 1e6) - cheapest)


def test_rounding_never_overspends_when_every_ceiling_is_over_budget() -> None:
    from allocator.solver import round_integers

    req = _request(1000.0).model_copy(update={"axes": INT_AXES})
    # a continuous plan that spends the whole budget with fractional counts: ceilings overspend
    levels = {"tool_diversity": 5.7, "task_count": (1000 - 150 * 5.7) / 0.8 - 0.3, "repair_rate": 0.0}
    out = round_integers(req, levels, multiplicative)
    assert req.cost.total(out, 1e6) <= 1000.0
    assert out["tool_diversity"] in (5.0, 6.0) and out["task_count"] == int(out["task_count"])


def test_quality_is_charged_above_its_baseline_only() -> None:
    cost = CostModel(unit="usd", axes=[AxisCost(name="repair_rate", per_unit=400.0, free_level=0.25),
                                       AxisCost(name="task_count", per_unit=0.8)])
    assert cost.total({"repair_rate": 0.25, "task_count": 100}, 1e6) == pytest.approx(80.0)
    assert cost.total({"repair_rate": 0.75, "task_count": 100}, 1e6) == pytest.approx(80.0 + 200.0)
    assert cost.total({"repair_rate": 0.0, "task_count": 100}, 1e6) == pytest.approx(80.0)  # below baseline: free


def test_per_task_scaling_and_compute_cost() -> None:
    cost = CostModel(unit="usd", axes=[AxisCost(name="repair_rate", per_unit=2.0, scales_with="task_count"),
                                       AxisCost(name="task_count", per_unit=0.5)],
                     per_pflop=10.0, tokens_per_task=1000.0)
    spend = cost.spend({"repair_rate": 0.5, "task_count": 200}, 1e9)
    assert spend["repair_rate"] == pytest.approx(2.0 * 0.5 * 200)
    assert spend["compute"] == pytest.approx(10.0 * 6 * 1e9 * 200 * 1000 / 1e15)


def test_a_tie_is_no_decision_naming_the_axes() -> None:
    from allocator.solver import decide

    d = decide(0.0003, (-0.001, 0.002), 0.0009, ["repair_rate", "tool_diversity"])
    assert d.verdict == "no_decision" and d.tied_axes == ["repair_rate", "tool_diversity"]
    assert "contains 0" in d.reason and "below the seed-to-seed SD 0.0009" in d.reason
    assert decide(0.0003, (0.0001, 0.0005), 0.0009, ["repair_rate"]).verdict == "no_decision"
    assert decide(0.05, (0.02, 0.08), 0.0009, ["repair_rate"]).verdict == "recommend"
    assert decide(0.0, None, None, []).verdict == "no_decision"


def test_quality_blind_law_gives_a_baseline_that_can_lose() -> None:
    """The baseline plans with a law that cannot see quality, and the plan's law scores both."""
    blind = Surface(score=lambda lv, n: 0.9 - 0.5 * lv["tool_diversity"] ** -0.5 - 0.3 * lv["task_count"] ** -0.8,
                    own="a blind law")
    draws = [lambda lv, n, s=s: multiplicative(lv, n) * s for s in np.linspace(0.97, 1.03, 11)]
    plan = solve(_request(5000), Surface(score=multiplicative, draws=draws), baseline_surface=blind)
    assert plan.baseline_method == "a blind law"
    assert plan.baseline.levels != plan.pinned.levels  # a different law picks a different diversity split
    assert plan.baseline.predicted_score == pytest.approx(multiplicative(plan.baseline.levels, 1e6))
    assert plan.gain_over_baseline >= plan.gain_over_pinned - 1e-12  # the pinned plan is the best diversity-only plan
    assert plan.baseline_own_prediction == pytest.approx(blind.score(plan.baseline.levels, 1e6))
    assert plan.decision.verdict == "recommend"


def test_equal_spend_splits_the_budget_and_never_overspends() -> None:
    from allocator.solver import equal_spend_levels

    for budget in (2000.0, 9000.0):
        req = _request(budget).model_copy(update={"axes": INT_AXES})
        lv = equal_spend_levels(req)
        spend = req.cost.spend(lv, 1e6)
        assert sum(spend.values()) <= budget
        assert lv["tool_diversity"] == int(lv["tool_diversity"]) and lv["task_count"] == int(lv["task_count"])
    lv = equal_spend_levels(_request(3000.0))
    spend = _request(3000.0).cost.spend(lv, 1e6)
    assert spend["tool_diversity"] == pytest.approx(spend["task_count"], rel=1e-6)
    assert spend["repair_rate"] == pytest.approx(spend["task_count"], rel=1e-6)
    assert sum(spend.values()) == pytest.approx(3000.0, rel=1e-6)


def test_a_replicate_sd_in_log_units_is_converted_to_score_points() -> None:
    plan = solve(_request(5000), Surface(score=multiplicative), replicate_sd=0.04, replicate_log=True)
    assert plan.replicate_sd == pytest.approx(0.04 * plan.baseline.predicted_score)
    raw = solve(_request(5000), Surface(score=multiplicative), replicate_sd=0.04)
    assert raw.replicate_sd == 0.04


def test_an_axis_the_score_ignores_sits_exactly_at_its_lower_end() -> None:
    """SLSQP leaves dust (1.9e-18 of a quota) on an axis that buys nothing; a plan states it as 0."""
    blind = lambda lv, n: 0.9 - 0.5 * lv["tool_diversity"] ** -0.5 - 0.3 * lv["task_count"] ** -0.8  # noqa: E731
    levels = solve_levels(_request(5000), blind)
    assert levels["repair_rate"] == 0.0


def test_snap_keeps_the_budget() -> None:
    from allocator.solver import _snap

    u = np.array([1e-17, 0.5, 1.0 - 1e-12])
    assert _snap(u, lambda v: 0.0).tolist() == [0.0, 0.5, 1.0]
    assert _snap(u, lambda v: -1.0 if v[2] == 1.0 else 0.0).tolist() == [0.0, 0.5, 1.0 - 1e-12]


def test_plan_matches_golden(golden) -> None:
    """The whole plan of a fixed request on a fixed surface (levels, spend, optimality, values) as JSON.

    An intended change to the solver or to the plan's contract: ``make golden``, then review the diff.
    """
    import json
    from pathlib import Path

    plan = solve(_request(5000), Surface(score=multiplicative))
    got = json.loads(json.dumps(plan.model_dump(mode="json"), sort_keys=True))
    path = Path(__file__).with_name("golden") / "plan_multiplicative_5000.json"
    want = json.loads(golden.check_in(path, json.dumps(got, indent=2, sort_keys=True) + "\n"))
    assert golden.diff(got, want, rel=1e-4, abs_tol=1e-6) == [], f"plan differs from {path}; if intended: {golden.command}"
