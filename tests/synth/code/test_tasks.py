"""The code-task factory: knobs act as documented, dependency graphs are acyclic or refused, tasks are testable."""

from __future__ import annotations

import statistics

import pytest
from pydantic import ValidationError

from synth.code.models import CodeFunction, CodeRecipe, CodeTask, TestCase, dependency_cycle
from synth.code.render import make_repo
from synth.code.tasks import TaskPlan, chain_value, make_task, plan_tasks, repositories, select_apis
from synth.errors import RecipeError


def _share(recipe: CodeRecipe) -> float:
    tasks = [p.task for p in plan_tasks(recipe) if p.task]
    rest = [f for t in tasks for f in t.functions[1:]]
    return sum(f.depends_on is not None for f in rest) / len(rest)


@pytest.mark.parametrize("apis", [4, 40])
def test_spec_dependency_sets_the_share_of_dependent_specs(apis):
    low = _share(CodeRecipe(tool_diversity=apis, task_count=120, spec_dependency=0.0))
    mid = _share(CodeRecipe(tool_diversity=apis, task_count=120, spec_dependency=0.5))
    high = _share(CodeRecipe(tool_diversity=apis, task_count=120, spec_dependency=1.0))
    assert low == 0.0
    assert 0.3 < mid < 0.7
    assert high > 0.85  # nearly every later spec finds an earlier function to build on, even with 4 APIs


def test_tool_diversity_takes_a_growing_prefix_of_one_order():
    small = [a.name for a in select_apis(CodeRecipe(tool_diversity=4, seed=3))]
    big = [a.name for a in select_apis(CodeRecipe(tool_diversity=12, seed=3))]
    assert big[:4] == small and len(set(big)) == 12
    used = {f.api for p in plan_tasks(CodeRecipe(tool_diversity=4, task_count=40, seed=3)) if p.task
            for f in p.task.functions}
    assert used <= set(small)


def test_db_diversity_spreads_tasks_over_distinct_repositories():
    recipe = CodeRecipe(task_count=30, db_diversity=5, seed=2)
    repos = {p.task.repo for p in plan_tasks(recipe) if p.task}
    assert len(repos) == 5 == len({r.name for r in repositories(recipe)})
    assert make_repo(7) == make_repo(7)


def test_every_test_expectation_comes_from_the_references():
    for p in plan_tasks(CodeRecipe(task_count=20, spec_dependency=1.0, seed=5)):
        by = {f.name: f for f in p.task.functions}
        for t in p.task.tests:
            assert chain_value(by, t.function, t.argument) == t.expected


def test_planning_is_deterministic():
    r = CodeRecipe(task_count=15, seed=9)
    assert [p.task for p in plan_tasks(r)] == [p.task for p in plan_tasks(r)]


def _fn(name: str, dep: str | None) -> CodeFunction:
    return CodeFunction(name=name, api="sum", depends_on=dep, param="values", kin="ints", kout="int", spec="s")


def test_a_cyclic_dependency_graph_is_refused_naming_the_cycle():
    tests = [TestCase(function="a", argument=[1], expected=1)]
    with pytest.raises(ValidationError, match=r"cycle: (a -> b -> a|b -> a -> b)"):
        CodeTask(task_id="t", repo="r", module="m", doc="d", functions=[_fn("a", "b"), _fn("b", "a")], tests=tests)
    assert dependency_cycle({"a": ["c"], "b": ["a"], "c": ["b"]})[0] == dependency_cycle({"a": ["c"], "b": ["a"],
                                                                                          "c": ["b"]})[-1]


def test_generation_rejects_a_cyclic_task_with_its_reason():
    plan = make_task(TaskPlan(0, make_repo(0), None), "t0", "m", "d", [_fn("a", "b"), _fn("b", "a")],
                     [TestCase(function="a", argument=[1], expected=1)], seed=0)
    assert plan.task is None and plan.reason == "dependency_cycle" and "a" in plan.detail and "b" in plan.detail
    dangling = make_task(TaskPlan(1, make_repo(0), None), "t1", "m", "d", [_fn("a", "zz")],
                         [TestCase(function="a", argument=[1], expected=1)], seed=0)
    assert dangling.task is None and dangling.reason == "bad_dependency" and "zz" in dangling.detail


def test_recipe_knobs_from_axes_and_bad_knobs():
    r = CodeRecipe.from_axes({"tool_diversity": 12.4, "spec_dependency": 0.5, "task_count": 100.0}, seed=3)
    assert (r.tool_diversity, r.task_count, r.spec_dependency, r.seed) == (12, 100, 0.5, 3)
    with pytest.raises(RecipeError, match="unknown code-domain knob 'coverage_quota'"):
        CodeRecipe.from_axes({"coverage_quota": 0.1})
    with pytest.raises(RecipeError, match="spec_dependency"):
        CodeRecipe.from_axes({"spec_dependency": 1.5})
    assert r.identity()["domain"] == "code"


def test_mean_functions_and_dependency_depth_follow_the_recipe():
    tasks = [p.task for p in plan_tasks(CodeRecipe(task_count=60, spec_dependency=1.0, min_functions=3,
                                                   max_functions=3))]
    assert {len(t.functions) for t in tasks} == {3}
    assert statistics.mean(max(t.depth(f.name) for f in t.functions) for t in tasks) > 1.0
