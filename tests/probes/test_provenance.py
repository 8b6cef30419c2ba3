from __future__ import annotations

import json

import pytest

from probes.provenance import match_value, parse_row, trace_dataset, trace_trajectory
from probes.toydata import make_dataset
from toolscale.errors import UsageError


def _by_id(prov):
    return {a.call_id: a for a in prov.actions}


def test_copied_from_tool_output_is_derivable(handmade):
    p = trace_trajectory(handmade[0])
    a1, a2 = _by_id(p)["call_1"], _by_id(p)["call_2"]
    assert a1.derivable and a1.supports == [1] and a1.depth == 1
    assert {x.path: x.match for x in a1.arguments} == {"origin": "exact", "destination": "exact", "date": "exact",
                                                        "cabin": "exact"}
    assert a2.derivable and a2.parents == ["call_1"] and a2.depth == 2
    by_path = {x.path: x for x in a2.arguments}
    assert by_path["flight_id"].match == "exact" and by_path["flight_id"].sources == [3]
    assert by_path["insured"].match == "schema"


def test_invented_constant_is_not_derivable(handmade):
    p = trace_trajectory(handmade[1])
    a2 = _by_id(p)["call_2"]
    assert not a2.derivable
    assert "flight_id" in a2.reason and "LH-4242" in a2.reason
    assert _by_id(p)["call_1"].derivable
    assert p.injected == ["call_2"]


def test_normalised_and_structured_matches(handmade):
    p = trace_trajectory(handmade[2])
    a1, a2 = _by_id(p)["call_1"], _by_id(p)["call_2"]
    assert {x.path: x.match for x in a1.arguments} == {"origin": "normalised", "destination": "normalised"}
    assert {x.path: x.match for x in a2.arguments} == {"flight_id": "exact", "seats": "structured"}
    assert a1.derivable and a2.derivable


def test_broken_actions_are_never_derivable(handmade):
    p = trace_trajectory(handmade[3])
    a1, a2 = _by_id(p)["call_1"], _by_id(p)["call_2"]
    assert a1.status == "malformed_arguments" and not a1.derivable
    assert a2.status == "unknown_tool" and not a2.derivable  # its argument is in the user turn, still not derivable
    assert any("empty tool output" in x for x in p.problems)


def test_no_actions_is_a_problem(handmade):
    p = trace_trajectory(handmade[4])
    assert p.actions == [] and p.problems == ["no actions"]


@pytest.mark.parametrize(("value", "content", "expected"), [
    ("Paris", "to Paris.", "exact"),
    (42, '{"id": 42}', "exact"),
    (42, "order 1420", "none"),
    ("ORD-1", "ORD-12", "none"),
    ("new york", "New  York", "normalised"),
    (1000, "costs 1,000 usd", "normalised"),
    (1.5, '{"p": 1.50}', "structured"),
    ("42", '{"n": 42}', "exact"),
    ("x", "", "none"),
])
def test_match_value(value, content, expected):
    assert match_value(value, content) == expected


def test_bad_rows_rejected_with_reason():
    with pytest.raises(UsageError, match="trajectory 3: 'messages'"):
        parse_row({"messages": "hi"}, 3)
    with pytest.raises(UsageError, match="'meta' is not valid JSON"):
        parse_row({"messages": [], "meta": "{bad"}, 0)
    with pytest.raises(UsageError, match="role 'robot'"):
        parse_row({"messages": [{"role": "robot", "content": ""}]}, 0)


def test_provenance_recovers_injected_labels_on_toy_data():
    rows = make_dataset(60, defect_rate=0.5, seed=1)
    provs = trace_dataset(rows)
    n = sum(len(p.actions) for p in provs)
    agree = sum(a.derivable == (a.call_id not in p.injected) for p in provs for a in p.actions)
    assert n > 100 and agree == n
    assert any(p.injected for p in provs) and not all(p.injected for p in provs)
    json.dumps([p.model_dump(mode="json") for p in provs])
