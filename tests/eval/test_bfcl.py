"""BFCL v4 data from the bfcl-eval wheel: loading, and the scorer validated on the possible answers."""

from __future__ import annotations

import zipfile
from collections import Counter

import pytest

from eval.ast_match import gold_calls, match_item
from eval.bfcl import ENV_VAR, WHEEL_NAME, find_wheel, load_bfcl
from eval.errors import BenchmarkDataError
from eval.models import ParsedOutput, ToolCall
from eval.parsing import format_tool_call, parse_output
from eval.prompts import item_request

try:
    find_wheel()
    HAVE_WHEEL = True
except BenchmarkDataError:
    HAVE_WHEEL = False
needs_wheel = pytest.mark.skipif(not HAVE_WHEEL, reason=f"{WHEEL_NAME} not in .cache/bfcl (run make install)")


@pytest.fixture(scope="module")
def items():
    return load_bfcl()


def _text(calls):
    return "".join(format_tool_call(c) for c in calls) or "No function fits."


@needs_wheel
def test_categories_and_counts(items):
    assert Counter(i.category for i in items) == {"simple": 400, "multiple": 200, "parallel": 200,
                                                  "parallel_multiple": 200, "irrelevance": 240}
    assert all(i.ground_truth for i in items if i.category != "irrelevance")
    assert all(not i.ground_truth for i in items if i.category == "irrelevance")
    req = item_request(items[0])
    assert req.messages[-1]["role"] == "user" and req.tools[0]["type"] == "function"
    assert req.tools[0]["function"]["parameters"]["type"] == "object"  # BFCL's "dict" shown as JSON schema


@needs_wheel
def test_possible_answers_score_100_percent(items):
    failed = [i.id for i in items if not match_item(i, parse_output(_text(gold_calls(i)))).valid]
    assert failed == []


@needs_wheel
def test_every_listed_alternative_is_accepted(items):
    """Each non-optional allowed value of each parameter, substituted into the gold call, still matches."""
    checked = 0
    for it in items:
        if it.category not in ("simple", "multiple"):
            continue
        gold = gold_calls(it)[0]
        for param, allowed in next(iter(it.ground_truth[0].values())).items():
            for value in allowed:
                if value == "" or isinstance(value, dict | list):  # nested possible answers, not values
                    continue
                call = ToolCall(name=gold.name, arguments={**gold.arguments, param: value})
                assert match_item(it, ParsedOutput(calls=[call])).valid, (it.id, param, value)
                checked += 1
    assert checked > 700


def _perturb_value(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int | float):
        return v + 7
    if isinstance(v, str):
        return v + " zz"
    if isinstance(v, list):
        return [*v, "zz"]
    if isinstance(v, dict):
        return {**v, "zz_key": 1}
    return "zz"


def _perturbations(calls):
    """Named perturbed answers, each of which must be wrong."""
    first = calls[0]
    yield "no call", []
    yield "renamed", [ToolCall(name=first.name + "_x", arguments=first.arguments), *calls[1:]]
    yield "extra param", [ToolCall(name=first.name, arguments={**first.arguments, "zz_unknown": 1}), *calls[1:]]
    yield "extra call", [*calls, calls[0]]
    if first.arguments:
        key = next(iter(first.arguments))
        yield "value", [ToolCall(name=first.name, arguments={**first.arguments, key: _perturb_value(first.arguments[key])}),
                        *calls[1:]]


@needs_wheel
def test_perturbed_answers_score_lower(items):
    totals, right = Counter(), Counter()
    for it in items:
        if not it.ground_truth:
            r = match_item(it, parse_output(format_tool_call(ToolCall(name=it.functions[0]["name"], arguments={}))))
            totals["call on irrelevance"] += 1
            right["call on irrelevance"] += r.valid
            continue
        for kind, calls in _perturbations(gold_calls(it)):
            r = match_item(it, parse_output(_text(calls)))
            totals[kind] += 1
            right[kind] += r.valid
            assert r.field_match < 1.0, (it.id, kind)
    for kind in totals:
        assert right[kind] / totals[kind] < 0.01, (kind, right[kind], totals[kind])
    assert set(totals) == {"no call", "renamed", "extra param", "extra call", "value", "call on irrelevance"}


def test_missing_wheel_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    with pytest.raises(BenchmarkDataError, match="does not exist.*pip download --no-deps bfcl-eval"):
        load_bfcl()
    bad = tmp_path / WHEEL_NAME
    bad.write_text("not a zip")
    with pytest.raises(BenchmarkDataError, match="not a readable wheel"):
        load_bfcl()
    other = tmp_path / "bfcl_eval-1.0-py3-none-any.whl"
    other.write_text("x")
    monkeypatch.setenv(ENV_VAR, str(other))
    with pytest.raises(BenchmarkDataError, match="not the pinned version"):
        load_bfcl()


def test_reads_a_wheel_named_by_env(tmp_path, monkeypatch):
    """A minimal wheel with the same layout is read straight from the zip."""
    wheel = tmp_path / WHEEL_NAME
    q = '{"id": "simple_python_0", "question": [[{"role": "user", "content": "f of 2"}]], ' \
        '"function": {"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}}'
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("bfcl_eval/data/BFCL_v4_simple_python.json", q + "\n")
        zf.writestr("bfcl_eval/data/possible_answer/BFCL_v4_simple_python.json",
                    '{"id": "simple_python_0", "ground_truth": [{"f": {"x": [2]}}]}\n')
    monkeypatch.setenv(ENV_VAR, str(wheel))
    (it,) = load_bfcl(["simple"])
    assert it.functions[0]["name"] == "f" and gold_calls(it) == [ToolCall(name="f", arguments={"x": 2})]
    with pytest.raises(BenchmarkDataError, match="missing from the BFCL wheel"):
        load_bfcl(["multiple"])
    with pytest.raises(BenchmarkDataError, match="unknown BFCL category 'live'"):
        load_bfcl(["live"])


def _random_value(rng, depth=0):
    kinds = ["int", "float", "str", "bool", "none"] + (["list", "dict"] if depth < 2 else [])
    k = rng.choice(kinds)
    if k == "int":
        return rng.randint(-5, 5)
    if k == "float":
        return rng.uniform(-5, 5)
    if k == "str":
        return rng.choice(["", "x", "New York", "'q'", "1"])
    if k == "bool":
        return rng.random() < 0.5
    if k == "none":
        return None
    if k == "list":
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["a", "name", "type"]): _random_value(rng, depth + 1) for _ in range(rng.randint(0, 2))}


@needs_wheel
def test_random_arguments_never_crash_the_matcher(items):
    import random

    rng = random.Random(0)
    for it in items:
        fn = rng.choice(it.functions)
        params = list((fn.get("parameters") or {}).get("properties") or {}) + ["zz"]
        calls = [ToolCall(name=fn["name"], arguments={p: _random_value(rng) for p in rng.sample(params, k=min(len(params), 3))})
                 for _ in range(rng.randint(1, 3))]
        r = match_item(it, ParsedOutput(calls=calls))
        assert 0.0 <= r.field_match <= 1.0
