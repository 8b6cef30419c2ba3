"""allocator/baseline.py: the best recipe observed at the largest fitted rung (the plan's stronger baseline)."""

from __future__ import annotations

from types import SimpleNamespace

from allocator.baseline import best_observed
from allocator.models import AxisCost, CostModel
from allocator.solver import beats_observed
from allocator.models import Decision
from toolscale.config import parse_config

CFG = parse_config({"experiment": {"name": "e"}, "ladder": [{"name": "s"}],
                    "axes": [{"name": "tool_diversity", "kind": "diversity", "unit": "tools", "min": 8, "max": 40},
                             {"name": "repair_rate", "kind": "quality", "unit": "fraction", "min": 0, "max": 1,
                              "spacing": "linear"}]})
COST = CostModel(unit="usd", axes=[AxisCost(name="tool_diversity", per_unit=100.0),
                                   AxisCost(name="repair_rate", per_unit=1000.0)])


def _run(rid, tools, repair, n, flops, bpb, split="fit"):
    return SimpleNamespace(run_id=rid, recipe={"tool_diversity": tools, "repair_rate": repair}, model_params=n,
                           train_flops=flops, model_size=f"m{n:g}", split=split, metrics={"b/bpb": bpb})


RUNS = [_run("a", 8, 0.0, 1e4, 1e9, 2.0), _run("b", 40, 1.0, 1e4, 1e9, 1.0),  # smaller rung: not read
        _run("c", 8, 0.0, 4e4, 4e9, 1.8), _run("c2", 8, 0.0, 4e4, 4e9, 1.6),  # seeds averaged: 1.7
        _run("d", 40, 0.0, 4e4, 4e9, 1.5), _run("e", 40, 1.0, 4e4, 4e9, 1.2),
        _run("f", 40, 0.0, 4e4, 1e9, 0.1),  # a smaller cell of the largest rung: not read
        _run("g", 8, 1.0, 2e5, 9e10, 0.5, split="heldout")]  # held out: never read


def test_the_best_recipe_within_budget_at_the_largest_fitted_rung():
    levels, source = best_observed(RUNS, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                                   model_params=1e5)
    assert levels == {"tool_diversity": 40.0, "repair_rate": 1.0} and "b/bpb 1.2" in source
    # the best costs 5,000; under 4,500 the best affordable one is 40 tools without repair
    levels, _ = best_observed(RUNS, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=4500.0,
                              model_params=1e5)
    assert levels == {"tool_diversity": 40.0, "repair_rate": 0.0}
    levels, source = best_observed(RUNS, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=900.0,
                                   model_params=1e5)
    assert levels == {"tool_diversity": 8.0, "repair_rate": 0.0} and "mean of 2 seed(s)" in source
    assert best_observed(RUNS, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=100.0,
                         model_params=1e5) is None
    # the fit's own target values replace the stored metric
    values = {"c": 1.0, "c2": 1.0, "d": 3.0, "e": 3.0}
    levels, _ = best_observed(RUNS, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                              model_params=1e5, values=values)
    assert levels == {"tool_diversity": 8.0, "repair_rate": 0.0}


def test_lone_runs_at_a_larger_size_or_cell_rank_nothing():
    """A verification or proposed run above the ladder, or at a new token count, is one recipe: not a ranking."""
    lone = RUNS + [_run("v", 8, 0.0, 2e5, 9e10, 0.2),  # one run at a larger size
                   _run("t", 8, 0.0, 4e4, 8e9, 0.3)]  # one run at a larger cell of the rung
    levels, source = best_observed(lone, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                                   model_params=1e5)
    assert levels == {"tool_diversity": 40.0, "repair_rate": 1.0} and "of 3 recipes" in source
    # three runs make a rung: then it is the one read
    rung = lone + [_run("v2", 40, 0.0, 2e5, 9e10, 0.4), _run("v3", 40, 1.0, 2e5, 9e10, 0.3)]
    levels, source = best_observed(rung, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                                   model_params=1e5)
    assert levels == {"tool_diversity": 8.0, "repair_rate": 0.0} and "b/bpb 0.2" in source


def test_runs_without_a_config_axis_are_no_candidates():
    # imported runs that carry tool_diversity only, planned with a config that also has repair_rate: the cost
    # model raised KeyError 'repair_rate' (a traceback from `allocate`)
    runs = [SimpleNamespace(**{**vars(r), "recipe": {"tool_diversity": r.recipe["tool_diversity"]}}) for r in RUNS]
    assert best_observed(runs, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                         model_params=1e5) is None
    mixed = runs[:4] + RUNS[4:]  # the runs that carry both axes are still candidates
    levels, _ = best_observed(mixed, CFG, key="b/bpb", lower_is_better=True, cost=COST, budget=6000.0,
                              model_params=1e5)
    assert levels == {"tool_diversity": 40.0, "repair_rate": 1.0}


def test_a_plan_that_does_not_beat_the_best_observed_recipe_is_no_decision():
    ok = Decision(verdict="recommend", reason="gain +0.1")
    fields = {"gain_over_best_observed": 0.02, "best_observed_gain_interval": (-0.01, 0.05),
              "best_observed_source": "the best of 4 recipes"}
    d = beats_observed(ok, fields)
    assert d.verdict == "no_decision" and "does not beat the best of 4 recipes" in d.reason
    assert beats_observed(ok, {**fields, "best_observed_gain_interval": (0.01, 0.05)}) == ok
    assert beats_observed(ok, {}) == ok
    no = Decision(verdict="no_decision", reason="no decision at this budget: x")
    assert beats_observed(no, fields).reason.startswith("no decision at this budget: x; the plan does not beat")
