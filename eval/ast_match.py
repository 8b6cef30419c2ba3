"""AST matching of tool calls against possible answers, with BFCL's semantics.

This re-implements the checker of the Berkeley Function Calling Leaderboard
(``bfcl_eval/eval_checker/ast_eval/ast_checker.py``, Apache-2.0) for Python-typed functions,
without its dependencies, and extends its type table with JSON schema's names (``number``,
``object``) so the held-out bundled servers' schemas are matched the same way.

Rules (BFCL's):

* **simple**: exactly one call; **multiple**: exactly one call, of the expected function among
  several offered; **parallel / parallel_multiple**: as many calls as expected, matched in any
  order (greedily, in the order of the expected calls, as BFCL does).
* A call matches when the function name is equal, every *required* parameter is present, every
  given parameter is known to the function *and* listed in the possible answer, its type is right
  (an integer is accepted for a float; a value of the possible answer's own type is accepted as a
  "variable"), and its value is among the allowed ones. Strings are compared after dropping
  spaces and ``,./-_*^`` and lower-casing; lists element-wise the same way; dicts key by key.
  A parameter of the possible answer that is not given must list ``""`` (optional).
* **irrelevance**: right when the model attempts no call at all. We are stricter than BFCL here:
  a *malformed* call attempt counts as a call (BFCL counts a decode failure as "no call").

Beside the 0/1 verdict, :func:`match_item` returns ``field_match``, a continuous score: per pair
of (expected call, predicted call), the share of fields right out of
``1 + |params of the possible answer| + |unexpected params given|`` (the name is one field);
pairs are assigned to maximise the total (Hungarian), and the sum is divided by
``max(#expected, #attempted)``, so extra or missing calls cost.
"""

from __future__ import annotations

import re
from typing import Any

from eval.models import CallItem, MatchResult, ParsedOutput, ToolCall

__all__ = ["match_item", "match_call", "field_score", "gold_calls", "standardize_string", "TYPE_MAP"]

TYPE_MAP: dict[str, type] = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "object": dict, "any": str,
}
"""Declared parameter type -> Python type of a JSON-decoded value (BFCL's table plus JSON schema's)."""

_NESTED = ("array", "tuple")
_STD = re.compile(r"[ ,./\-_*^]")
_Check = tuple[bool, str, str]  # (valid, error, error_type)
_OK: _Check = (True, "", "")


def standardize_string(text: str) -> str:
    """BFCL's string normal form: drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``\"``."""
    return _STD.sub("", text).lower().replace("'", '"')


def _first_type(allowed: list[Any]) -> type | None:
    for a in allowed:
        if a != "":
            return type(a)
    return None


def _type_of(desc: Any) -> tuple[str | None, type | None]:
    t = desc.get("type") if isinstance(desc, dict) else None
    return (t, TYPE_MAP.get(t)) if isinstance(t, str) else (None, None)


def _type_check(param: str, value: Any, allowed: list[Any], type_name: str, expected: type,
                nested: type | None) -> tuple[bool, bool, str]:
    """BFCL's ``type_checker``: (valid, is_variable, error)."""
    pat = _first_type(allowed)
    is_variable = pat is not None and pat is not expected
    if type(value) is expected:
        if nested is None:
            return True, is_variable, ""
        for option in allowed:
            ok = True
            if isinstance(option, list):
                for v in value:
                    if not _type_check(param, v, option, nested.__name__, nested, None)[0]:
                        ok = False
                        break
            if ok:
                return True, is_variable, ""
        return False, is_variable, f"nested type check failed for {param!r}: {value!r}"
    if pat is not None and type(value) is pat:
        return True, True, ""
    return False, False, f"wrong type for {param!r}: expected {type_name}, got {type(value).__name__}"


def _string_check(param: str, value: str, allowed: list[Any]) -> _Check:
    if standardize_string(value) in [standardize_string(a) for a in allowed if isinstance(a, str)]:
        return _OK
    return False, f"invalid value for {param!r}: {value!r}, expected one of {allowed!r}", "value_error:string"


def _std(v: Any) -> Any:
    return standardize_string(v) if isinstance(v, str) else v


def _list_check(param: str, value: list, allowed: list[Any]) -> _Check:
    got = [_std(v) for v in value]
    options = [[_std(v) for v in a] for a in allowed if isinstance(a, list)]
    if got in options:
        return _OK
    return False, f"invalid value for {param!r}: {value!r}, expected one of {allowed!r}", "value_error:list"


def _dict_check(param: str, value: dict, allowed: list[Any]) -> _Check:
    last: _Check = (False, f"no allowed dict for {param!r}", "value_error:dict")
    for option in allowed:
        if option == "" or not isinstance(option, dict):
            continue
        last = _OK
        for key, v in value.items():
            if key not in option:
                last = (False, f"unexpected dict key {key!r} in {param!r}", "value_error:dict_key")
                break
            choices = option[key] if isinstance(option[key], list) else [option[key]]
            if _std(v) not in [_std(c) for c in choices]:
                last = (False, f"invalid value for {param}.{key}: {v!r}", "value_error:dict_value")
                break
        if last[0]:
            for key, choices in option.items():
                if key not in value and "" not in (choices if isinstance(choices, list) else [choices]):
                    last = (False, f"missing dict key {key!r} in {param!r}", "value_error:dict_key")
                    break
        if last[0]:
            return _OK
    return last


def _list_dict_check(param: str, value: list, allowed: list[Any]) -> _Check:
    last: _Check = (False, f"no allowed list of dicts for {param!r}", "value_error:list_dict")
    for option in allowed:
        if not isinstance(option, list):
            continue
        if len(option) != len(value):
            last = (False, f"wrong number of dicts in {param!r}", "value_error:list_dict_count")
            continue
        last = _OK
        for v, o in zip(value, option, strict=True):
            last = _dict_check(param, v, [o]) if isinstance(v, dict) else (
                False, f"expected dicts in {param!r}", "type_error:nested")
            if not last[0]:
                break
        if last[0]:
            return _OK
    return last


def _param_check(param: str, value: Any, allowed: list[Any], desc: dict[str, Any]) -> _Check:
    """One given parameter against its allowed values and declared type."""
    type_name, expected = _type_of(desc)
    if expected is None:  # undeclared or unknown type (anyOf, a list of types): compare values only
        if isinstance(value, str):
            return _string_check(param, value, allowed)
        return _OK if value in allowed else (False, f"invalid value for {param!r}: {value!r}", "value_error:others")
    nested = None
    if type_name in _NESTED:
        nested = _type_of(desc.get("items"))[1]
    if expected is float and type(value) is int:
        value = float(value)
    ok, is_variable, err = _type_check(param, value, allowed, type_name, expected, nested)
    if not ok:
        return False, err, "type_error"
    if not is_variable:
        if expected is dict:
            return _dict_check(param, value, allowed)
        if expected is list and nested is dict:
            return _list_dict_check(param, value, allowed)
        if expected is str:
            return _string_check(param, value, allowed)
        if expected is list:
            return _list_check(param, value, allowed)
    if value in allowed:
        return _OK
    return False, f"invalid value for {param!r}: {value!r}, expected one of {allowed!r}", "value_error:others"


def _params_of(function: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    params = (function or {}).get("parameters") or {}
    props = params.get("properties") or {}
    required = params.get("required") or []
    return props, list(required)


def match_call(function: dict[str, Any] | None, call: ToolCall, answer: dict[str, dict[str, list[Any]]]) -> _Check:
    """BFCL's ``simple_function_checker``: one call against one possible answer ``{name: {param: [...]}}``.

    Returns ``(valid, error, error_type)``.
    """
    name, expected_args = next(iter(answer.items()))
    if function is None:
        return False, f"function {name!r} is not among the offered functions", "bad_item"
    if call.name != function.get("name", name):
        return False, f"function name {call.name!r} is not {name!r}", "wrong_func_name"
    props, required = _params_of(function)
    for param in required:
        if param not in call.arguments:
            return False, f"missing required parameter {param!r}", "missing_required"
    for param, value in call.arguments.items():
        if param not in props or param not in expected_args:
            return False, f"unexpected parameter {param!r}", "unexpected_param"
        result = _param_check(param, value, expected_args[param], props[param])
        if not result[0]:
            return result
    for param, allowed in expected_args.items():
        if param not in call.arguments and "" not in allowed:
            return False, f"parameter {param!r} not given and not optional", "missing_optional"
    return _OK


def field_score(function: dict[str, Any] | None, call: ToolCall, answer: dict[str, dict[str, list[Any]]]) -> float:
    """Share of fields right in one (expected, predicted) pair, in [0, 1] (see the module notes)."""
    name, expected_args = next(iter(answer.items()))
    props, _ = _params_of(function)
    extra = [p for p in call.arguments if p not in expected_args]
    right = float(call.name == name)
    for param, allowed in expected_args.items():
        if param not in call.arguments:
            right += "" in allowed
        elif param in props:
            right += _param_check(param, call.arguments[param], allowed, props[param])[0]
    return right / (1 + len(expected_args) + len(extra))


def _find(functions: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for f in functions:
        if f.get("name") == name:
            return f
    return None


def _field_match(item: CallItem, parsed: ParsedOutput) -> float:
    expected = item.ground_truth
    calls = parsed.calls
    denom = max(len(expected), len(calls) + len(parsed.malformed))
    if not expected or not calls:
        return 0.0
    scores = [[field_score(_find(item.functions, next(iter(a))), c, a) for c in calls] for a in expected]
    if len(expected) == 1:
        return max(scores[0]) / denom
    if len(calls) == 1:
        return max(row[0] for row in scores) / denom
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    cost = -np.asarray(scores)
    rows, cols = linear_sum_assignment(cost)
    return float(-cost[rows, cols].sum()) / denom


def match_item(item: CallItem, parsed: ParsedOutput) -> MatchResult:
    """Score one parsed completion against an item (0/1 verdict plus ``field_match``)."""
    if item.category == "irrelevance" or not item.ground_truth:
        if parsed.attempted:
            why = "called a tool where no call was right" if parsed.calls else "malformed call attempt"
            return MatchResult(valid=False, error=why, error_type="irrelevance:called", field_match=0.0)
        return MatchResult(valid=True, field_match=1.0)
    fm = _field_match(item, parsed)
    if parsed.malformed:
        return MatchResult(valid=False, error=f"malformed tool call: {parsed.malformed[0]}",
                           error_type="malformed", field_match=fm)
    calls, expected = parsed.calls, item.ground_truth
    if len(calls) != len(expected):
        return MatchResult(valid=False, error=f"{len(calls)} calls, expected {len(expected)}",
                           error_type="wrong_count", field_match=fm)
    if item.category in ("parallel", "parallel_multiple"):
        used: set[int] = set()
        for i, answer in enumerate(expected):
            function = _find(item.functions, next(iter(answer)))
            result: _Check = (False, "no call left", "cannot_find_match")
            for j, call in enumerate(calls):
                if j in used:
                    continue
                result = match_call(function, call, answer)
                if result[0]:
                    used.add(j)
                    break
            if not result[0]:
                return MatchResult(valid=False, error=f"no call matches expected call {i}: {result[1]}",
                                   error_type=f"cannot_find_match:{result[2]}", field_match=fm)
        return MatchResult(valid=True, field_match=fm)
    answer = expected[0]
    valid, error, error_type = match_call(_find(item.functions, next(iter(answer))), calls[0], answer)
    return MatchResult(valid=valid, error=error, error_type=error_type, field_match=fm)


def _pick(allowed: Any, required: bool = False) -> tuple[bool, Any]:
    """(present, value): omitted when ``""`` is allowed and not required, else the first non-``""`` value."""
    if not isinstance(allowed, list):
        return True, allowed
    if "" in allowed and not required:
        return False, None
    for a in allowed:
        if a != "":
            return True, a
    return False, None


def _gold_value(value: Any, desc: dict[str, Any]) -> Any:
    type_name, expected = _type_of(desc)
    nested = _type_of(desc.get("items"))[1] if type_name in _NESTED else None
    if expected is dict and isinstance(value, dict):
        return _gold_dict(value)
    if expected is list and nested is dict and isinstance(value, list):
        return [_gold_dict(v) if isinstance(v, dict) else v for v in value]
    return value


def _gold_dict(option: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, choices in option.items():
        present, v = _pick(choices)
        if present:
            out[key] = v
    return out


def gold_calls(item: CallItem) -> list[ToolCall]:
    """The reference answer of an item as calls: the first allowed value of each parameter.

    Optional parameters (``""`` among the allowed values, not required) are omitted, the minimal right answer
    (one BFCL item lists an optional parameter under the wrong function); nested possible answers (dicts, lists
    of dicts) are resolved the same way. Irrelevance items give ``[]``.
    """
    out = []
    for answer in item.ground_truth:
        name, expected_args = next(iter(answer.items()))
        props, required = _params_of(_find(item.functions, name))
        args = {}
        for param, allowed in expected_args.items():
            present, value = _pick(allowed, param in required)
            if present:
                args[param] = _gold_value(value, props.get(param) or {})
        out.append(ToolCall(name=name, arguments=args))
    return out
