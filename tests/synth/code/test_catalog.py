"""The library API catalog: every API's rendered code agrees with its reference, in the jail; orders compose."""

from __future__ import annotations

import random

import pytest

from synth.code.catalog import (API_CATALOG, HELDOUT_APIS, PARAM_NAMES, ROOT_KINDS, api, api_order, make_input,
                                training_apis)
from synth.code.models import CodeFunction, CodeTask, TestCase
from synth.code.render import module_source
from synth.code.render import tests_source as render_tests
from synth.code.runner import Suite, run_suites
from synth.code.tasks import chain_value


def _module_for(a, seed: int) -> CodeTask:
    """A module exercising API ``a``: alone when it takes a root kind, after ``statistics.mean`` for ``num``."""
    rng = random.Random(seed)
    fns = []
    if a.kin == "num":
        mean = api("statistics.mean")
        fns.append(CodeFunction(name="mean", api=mean.name, param="values", kin="ints", kout="num", spec="Return x."))
        fns.append(CodeFunction(name="f", api=a.name, depends_on="mean", param="values", kin="ints", kout=a.kout,
                                spec="Return y."))
    else:
        fns.append(CodeFunction(name="f", api=a.name, const=a.consts[0] if a.consts else None, param=PARAM_NAMES[a.kin],
                                kin=a.kin, kout=a.kout, spec="Return y."))
    by = {f.name: f for f in fns}
    tests, tries = [], 0
    while len(tests) < 4 and tries < 200:
        tries += 1
        arg = make_input(fns[-1].kin, rng)
        try:
            tests.append(TestCase(function="f", argument=arg, expected=chain_value(by, "f", arg)))
        except (ValueError, ArithmeticError, IndexError):
            continue
    return CodeTask(task_id=f"t-{a.stem}", repo="r0", module=f"m_{a.stem}", doc="d", functions=fns, tests=tests,
                    style={"hints": seed % 2 == 0, "docstrings": seed % 3 == 0, "layout": 0, "verb": "Return"})


def test_every_api_renders_code_its_reference_agrees_with_in_the_jail():
    """One jail batch per 48 modules (about 2 s of jail time in all)."""
    tasks = [_module_for(a, i) for i, a in enumerate(API_CATALOG)]
    assert all(len(t.tests) == 4 for t in tasks), [t.task_id for t in tasks if len(t.tests) < 4]
    suites = [Suite(t.module, module_source(t, len(t.functions)), render_tests(t)) for t in tasks]
    results = run_suites(suites)
    bad = {t.task_id: results[s.key] for t, s in zip(tasks, suites) if not results[s.key].all_passed}
    assert not bad
    assert {results[s.key].total for s in suites} == {4}


def test_a_wrong_reference_is_caught_by_the_jail():
    """The check can fail: a test expecting another value than the code computes fails, naming the value."""
    t = _module_for(api("sum"), 0)
    wrong = t.model_copy(update={"tests": [t.tests[0].model_copy(update={"expected": t.tests[0].expected + 1})]})
    res = run_suites([Suite(wrong.module, module_source(wrong, 1), render_tests(wrong))])
    (r,) = res.values()
    assert r.passed == 0 and r.total == 1 and f"got {t.tests[0].expected}" in r.failures[0]


def test_catalog_splits_training_and_heldout_apis():
    names = {a.name for a in API_CATALOG}
    assert set(HELDOUT_APIS) <= names and len(HELDOUT_APIS) == 10
    assert not {a.name for a in training_apis()} & set(HELDOUT_APIS)
    assert len(training_apis()) == len(API_CATALOG) - len(HELDOUT_APIS) >= 40
    assert len({a.stem for a in API_CATALOG}) == len(API_CATALOG)  # function names never collide


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_api_order_is_seeded_and_its_prefixes_compose(seed):
    order = api_order(training_apis(), seed)
    assert order == api_order(training_apis(), seed) and sorted(a.name for a in order) == sorted(
        a.name for a in training_apis())
    first = order[:4]
    assert first[0].kin in ROOT_KINDS
    # the walk chains: each of the first APIs takes what the one before it gives
    assert all(b.kin == a.kout for a, b in zip(first, first[1:]))
    assert api_order(training_apis(), seed) != api_order(training_apis(), seed + 100)


def test_unknown_api_names_the_known_ones():
    with pytest.raises(KeyError, match="unknown API 'nope'"):
        api("nope")
