"""BFCL AST semantics on hand-written items (no data files needed)."""

from __future__ import annotations

import pytest

from eval.ast_match import field_score, gold_calls, match_item, standardize_string
from eval.models import CallItem, ParsedOutput, ToolCall
from eval.parsing import parse_output

AREA = {"name": "area", "description": "Area of a triangle.",
        "parameters": {"type": "dict", "properties": {
            "base": {"type": "integer"}, "height": {"type": "float"}, "unit": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opts": {"type": "dict", "properties": {"round": {"type": "boolean"}}}},
            "required": ["base", "height"]}}
OTHER = {"name": "volume", "description": "Volume.", "parameters": {"type": "object", "properties": {
    "side": {"type": "number"}}, "required": ["side"]}}
ANSWER = {"area": {"base": [10], "height": [5.0], "unit": ["cm", "centimeters", ""], "tags": [["a", "b"], ""],
                   "opts": [{"round": [True]}, ""]}}


def item(category="simple", functions=(AREA,), truth=(ANSWER,)):
    return CallItem(id="t", category=category, messages=[{"role": "user", "content": "q"}],
                    functions=list(functions), ground_truth=list(truth))


def verdict(it, *calls, malformed=()):
    return match_item(it, ParsedOutput(calls=list(calls), malformed=list(malformed)))


def test_exact_and_equivalent_answers_match():
    it = item()
    assert verdict(it, ToolCall(name="area", arguments={"base": 10, "height": 5.0})).valid
    # int accepted for float; strings compared after BFCL's standardisation; optional values
    ok = ToolCall(name="area", arguments={"base": 10, "height": 5, "unit": "Centi-meters", "tags": ["A", "b"],
                                          "opts": {"round": True}})
    r = verdict(it, ok)
    assert r.valid and r.field_match == 1.0


@pytest.mark.parametrize("call, error_type", [
    (ToolCall(name="areas", arguments={"base": 10, "height": 5.0}), "wrong_func_name"),
    (ToolCall(name="area", arguments={"base": 10}), "missing_required"),
    (ToolCall(name="area", arguments={"base": 11, "height": 5.0}), "value_error:others"),
    (ToolCall(name="area", arguments={"base": "10", "height": 5.0}), "type_error"),
    (ToolCall(name="area", arguments={"base": True, "height": 5.0}), "type_error"),
    (ToolCall(name="area", arguments={"base": 10, "height": 5.0, "unit": "m"}), "value_error:string"),
    (ToolCall(name="area", arguments={"base": 10, "height": 5.0, "color": "red"}), "unexpected_param"),
    (ToolCall(name="area", arguments={"base": 10, "height": 5.0, "tags": ["b", "a"]}), "value_error:list"),
    (ToolCall(name="area", arguments={"base": 10, "height": 5.0, "opts": {"round": False}}), "value_error:dict_value"),
])
def test_wrong_answers_fail_with_reason(call, error_type):
    r = verdict(item(), call)
    assert not r.valid
    assert r.error_type == error_type, r
    assert 0.0 < r.field_match < 1.0


def test_counts_and_malformed():
    it = item()
    good = ToolCall(name="area", arguments={"base": 10, "height": 5.0})
    assert verdict(it).error_type == "wrong_count"
    r = verdict(it, good, good)
    assert not r.valid and r.error_type == "wrong_count" and r.field_match == 0.5
    r = verdict(it, good, malformed=["unterminated tool_call block"])
    assert not r.valid and r.error_type == "malformed"


def test_parallel_any_order_multiple_picks_the_right_function():
    a2 = {"area": {"base": [3], "height": [4.0]}}
    vol = {"volume": {"side": [2.0]}}
    par = item("parallel_multiple", (AREA, OTHER), (ANSWER, a2, vol))
    calls = [ToolCall(name="volume", arguments={"side": 2}), ToolCall(name="area", arguments={"base": 3, "height": 4}),
             ToolCall(name="area", arguments={"base": 10, "height": 5})]
    assert verdict(par, *calls).valid
    r = verdict(par, *calls[:2], ToolCall(name="area", arguments={"base": 9, "height": 5}))
    assert not r.valid and r.error_type.startswith("cannot_find_match")
    assert r.field_match == pytest.approx((1 + 1 + 5 / 6) / 3)
    mult = item("multiple", (AREA, OTHER), (vol,))
    assert verdict(mult, ToolCall(name="volume", arguments={"side": 2.0})).valid
    assert not verdict(mult, ToolCall(name="area", arguments={"base": 10, "height": 5.0})).valid


def test_irrelevance_right_only_without_any_attempt():
    it = item("irrelevance", truth=())
    assert match_item(it, parse_output("I cannot help with that.")).valid
    assert not match_item(it, parse_output('<tool_call>{"name": "area", "arguments": {}}</tool_call>')).valid
    # stricter than BFCL: a malformed attempt is a call attempt
    assert not match_item(it, parse_output('<tool_call>{"name": "area"')).valid


def test_variable_of_the_answers_type_is_accepted():
    fn = {"name": "f", "parameters": {"type": "dict", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
    it = item(functions=(fn,), truth=({"f": {"n": ["count"]}},))
    assert verdict(it, ToolCall(name="f", arguments={"n": "count"})).valid
    assert not verdict(it, ToolCall(name="f", arguments={"n": "other"})).valid


def test_gold_calls_match_and_omit_optional_unless_required():
    it = item()
    gold = gold_calls(it)
    assert gold == [ToolCall(name="area", arguments={"base": 10, "height": 5.0})]
    assert verdict(it, *gold).valid
    req = {"name": "g", "parameters": {"type": "dict", "properties": {"v": {"type": "integer"}}, "required": ["v"]}}
    it2 = item(functions=(req,), truth=({"g": {"v": [0, ""]}},))
    assert gold_calls(it2)[0].arguments == {"v": 0}


def test_field_score_counts_name_and_fields():
    assert field_score(AREA, ToolCall(name="x", arguments={}), {"area": {"base": [1], "height": [2.0]}}) == 0.0
    assert field_score(AREA, ToolCall(name="area", arguments={"base": 1}), {"area": {"base": [1], "height": [2.0]}}) \
        == pytest.approx(2 / 3)


def test_standardize_string():
    assert standardize_string("April 1, 2024") == standardize_string("april 1 2024") == "april12024"
