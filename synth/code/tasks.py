"""The code-task factory: modules of functions over library APIs, with a spec dependency graph and tests.

How the knobs act:

``tool_diversity``
    tasks draw their APIs from the first T of :func:`synth.code.catalog.api_order` (a walk over value kinds,
    so every prefix composes and a larger T is a superset of a smaller one);
``task_count``
    modules generated (before the jail filters);
``db_diversity``
    repositories (:func:`synth.code.render.make_repo`), assigned round-robin;
``spec_dependency``
    each function after a module's first depends on an earlier one with this probability: its spec names
    that function and its code calls it (``g(x) = api(f(x))``); when no API left composes with an earlier
    function it is written independent, and the manifest measures the share reached.

Every task is checked before it is kept: its dependency graph must be acyclic (a task with a cycle is
refused, :class:`~synth.code.models.CodeTask`), and each hidden test's expected value comes from the
catalog's reference; a function whose reference cannot produce a value for generated inputs (an empty
list where a maximum is asked, a number too large to list divisors of) is replaced by another API, and a
module that cannot be made testable is rejected as ``untestable``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from synth.code.catalog import PARAM_NAMES, ROOT_KINDS, Api, api, api_order, heldout_apis, make_input, training_apis
from synth.code.models import CodeFunction, CodeRecipe, CodeTask, TestCase
from synth.code.render import Repo, make_repo, module_name

__all__ = ["select_apis", "repositories", "plan_task", "plan_tasks", "TaskPlan", "chain_value", "MAX_VALUE_CHARS"]

MAX_VALUE_CHARS = 160
"""Longest JSON text of a test input or expected value (longer ones make unreadable tests)."""
_TRIES = 12


def select_apis(recipe: CodeRecipe) -> list[Api]:
    """The APIs a recipe's tasks may call: the first ``tool_diversity`` of the seeded order of the training
    APIs (all APIs, held-out ones included, when ``include_heldout``)."""
    pool = training_apis() + (heldout_apis() if recipe.include_heldout else [])
    return api_order(pool, recipe.seed)[: recipe.tool_diversity]


def repositories(recipe: CodeRecipe, base: int | None = None) -> list[Repo]:
    """The ``db_diversity`` repositories: seeds from ``seed * 1000`` up (``base`` up when given), skipping a seed
    whose repository name is already taken."""
    start = recipe.seed * 1000 if base is None else base
    out: list[Repo] = []
    seed = start
    while len(out) < recipe.db_diversity:  # names must differ (they are folders of one workspace)
        repo = make_repo(seed)
        if repo.name not in {r.name for r in out}:
            out.append(repo)
        seed += 1
    return out


def chain_value(fns: dict[str, CodeFunction], name: str, argument: Any) -> Any:
    """What function ``name`` returns for ``argument`` by the references: its dependency chain applied in order."""
    chain = []
    cur: CodeFunction | None = fns[name]
    while cur is not None:
        chain.append(cur)
        cur = fns[cur.depends_on] if cur.depends_on else None
    value = argument
    for f in reversed(chain):
        value = api(f.api).ref(value, f.const)
    return value


def _json_ok(value: Any) -> bool:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return len(text) <= MAX_VALUE_CHARS


def _cases(fns: dict[str, CodeFunction], fn: CodeFunction, n: int, rng: random.Random) -> list[TestCase] | None:
    """``n`` test cases of ``fn`` with distinct inputs, or None when the references cannot give them."""
    out: list[TestCase] = []
    seen: set[str] = set()
    for _ in range(_TRIES * n):
        arg = make_input(fn.kin, rng)
        key = json.dumps(arg)
        if key in seen:
            continue
        try:
            value = chain_value(fns, fn.name, arg)
        except (ValueError, ArithmeticError, IndexError, KeyError, TypeError, OverflowError):
            continue
        if isinstance(value, float) and value == int(value) and abs(value) < 1e15 and fn.kout == "int":
            value = int(value)
        if not (_json_ok(arg) and _json_ok(value)):
            continue
        seen.add(key)
        out.append(TestCase(function=fn.name, argument=arg, expected=value))
        if len(out) == n:
            return out
    return None


def _spec(recipe_verb: str, a: Api, const: Any, fn_param: str, dep: CodeFunction | None) -> str:
    x = f"`{fn_param}`" if dep is None else f"the result of `{dep.name}({fn_param})`"
    return f"{recipe_verb} {a.phrase.format(x=x, k=const)}."


def _name(a: Api, taken: set[str]) -> str:
    taken = taken | set(PARAM_NAMES.values())
    name = a.stem
    n = 2
    while name in taken:
        name, n = f"{a.stem}_{n}", n + 1
    return name


def _candidates(fns: list[CodeFunction], apis: Sequence[Api], used: set[str], dependent: bool
                ) -> list[tuple[Api, CodeFunction | None]]:
    if dependent:
        return [(a, f) for f in fns for a in apis if a.kin == f.kout and a.name not in used]
    return [(a, None) for a in apis if a.kin in ROOT_KINDS and a.name not in used]


def _pick(cands: list[tuple[Api, CodeFunction | None]], apis: Sequence[Api], used: set[str], want_chain: bool,
          rng: random.Random) -> tuple[Api, CodeFunction | None]:
    """One candidate; when dependents will be wanted, prefer an API whose output some unused API consumes."""
    if want_chain:
        chained = [c for c in cands if any(b.kin == c[0].kout and b.name not in used | {c[0].name} for b in apis)]
        if chained:
            return rng.choice(chained)
    return rng.choice(cands)


class TaskPlan:
    """A planned task, or why none could be planned (``task is None``)."""

    def __init__(self, index: int, repo: Repo, task: CodeTask | None, reason: str = "", detail: str = ""):
        self.index, self.repo, self.task, self.reason, self.detail = index, repo, task, reason, detail


def plan_task(index: int, recipe: CodeRecipe, apis: Sequence[Api], repo: Repo, taken: set[str],
              task_id: str | None = None) -> TaskPlan:
    """Plan task ``index``: its functions (APIs, constants, dependencies), specs and hidden tests.

    ``taken`` holds the module names already used in ``repo`` (the new one is added). Returns a
    :class:`TaskPlan` whose ``task`` is None with ``reason`` ``untestable`` or ``dependency_cycle``.
    """
    rng = random.Random(f"{recipe.seed}:code-task:{index}")
    tid = task_id or f"code-{index:05d}"
    k = rng.randint(recipe.min_functions, recipe.max_functions)
    fns: list[CodeFunction] = []
    tests: list[TestCase] = []
    used: set[str] = set()
    for i in range(k):
        dependent = i > 0 and rng.random() < recipe.spec_dependency
        cands = _candidates(fns, apis, used, dependent)
        fallback = dependent
        placed = False
        while not placed:
            if not cands and fallback:  # nothing composes (or nothing testable does): write it independent
                cands, fallback = _candidates(fns, apis, used, False), False
            if not cands:
                break
            a, dep = _pick(cands, apis, used, recipe.spec_dependency > 0 and i < k - 1, rng)
            cands.remove((a, dep))
            const = rng.choice(a.consts) if a.consts else None
            kin = dep.kin if dep is not None else a.kin
            param = dep.param if dep is not None else PARAM_NAMES[a.kin]
            fn = CodeFunction(name=_name(a, {f.name for f in fns}), api=a.name, const=const,
                              depends_on=dep.name if dep else None, param=param, kin=kin, kout=a.kout,
                              spec=_spec(repo.verb, a, const, param, dep))
            by = {f.name: f for f in fns} | {fn.name: fn}
            cases = _cases(by, fn, recipe.tests_per_function, rng)
            if cases is None:
                continue
            fns.append(fn)
            tests += cases
            used.add(a.name)
            placed = True
        if not placed and i < recipe.min_functions:
            return TaskPlan(index, repo, None, "untestable",
                            f"no API of the {len(apis)} offered gives testable function {i + 1}")
        if not placed:
            break
    mod = module_name(rng, taken)
    taken.add(mod)
    doc = f"{mod}: helpers of the {repo.name} repository."
    return make_task(TaskPlan(index, repo, None), tid, mod, doc, fns, tests, rng.randrange(2 ** 31))


def make_task(plan: TaskPlan, task_id: str, module: str, doc: str, fns: list[CodeFunction], tests: list[TestCase],
              seed: int) -> TaskPlan:
    """Validate a planned module as a :class:`CodeTask`; a cyclic or dangling dependency graph is refused
    (``reason`` ``dependency_cycle`` / ``bad_dependency``, the validator's message as ``detail``)."""
    try:
        task = CodeTask(task_id=task_id, repo=plan.repo.name, module=module, doc=doc, functions=fns, tests=tests,
                        style=plan.repo.style(), seed=seed)
    except ValidationError as err:
        msg = err.errors()[0]["msg"].removeprefix("Value error, ")
        return TaskPlan(plan.index, plan.repo, None, "dependency_cycle" if "cycle" in msg else "bad_dependency", msg)
    return TaskPlan(plan.index, plan.repo, task)


def plan_tasks(recipe: CodeRecipe, *, repo_base: int | None = None, id_prefix: str = "code") -> list[TaskPlan]:
    """Every task of a recipe, in order (repositories round-robin), planned or rejected with its reason."""
    apis = select_apis(recipe)
    repos = repositories(recipe, repo_base)
    taken: dict[str, set[str]] = {r.name: set() for r in repos}
    out = []
    for i in range(recipe.task_count):
        repo = repos[i % len(repos)]
        out.append(plan_task(i, recipe, apis, repo, taken[repo.name], task_id=f"{id_prefix}-{i:05d}"))
    return out
