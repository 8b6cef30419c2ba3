"""synth/chaincheck.py: the entity and destruction rules that drop chains before they become tasks (issue 31,
item 2), and the effect of a tool from its MCP annotations or its name (synth/observe.py's ``effect``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from synth.chaincheck import chain_problem, entity, side_entities
from synth.models import ToolDoc
from synth.observe import effect
from synth.plans import Step


def _doc(name, params, outputs=(), read_only=None, destructive=None, descriptions=None):
    props = {p: {"type": "string", **({"description": descriptions[p]} if descriptions and p in descriptions else {})}
             for p in params}
    return ToolDoc(server="shop", name=name, description=f"the {name} tool",
                   parameters={"type": "object", "properties": props, "required": list(params)},
                   output_fields=list(outputs), read_only=read_only, destructive=destructive)


DOCS = {d.name: d for d in [
    _doc("find_order", ["customer"], ["order_id", "product_id"]),
    _doc("get_order", ["order_id"], ["status"]),
    _doc("cancel_order", ["order_id"], ["status"]),
    _doc("reorder", ["order_id"], ["order_id"]),
    _doc("get_product", ["product_id"], ["price"]),
    _doc("find_employee", ["name"], ["employee_id", "manager_id"]),
    _doc("approve_leave", ["employee_id", "approver_id"], ["leave_id"],
         descriptions={"approver_id": "who approves: the employee's manager_id"}),
]}
SPEC = SimpleNamespace(docs=DOCS)


def test_entity_of_an_id_name_is_its_noun_without_direction_prefixes():
    assert entity("from_account_id") == "account" and entity("order_id") == "order"
    assert entity("customer") == "" and entity("id") == ""
    assert side_entities(SPEC, "find_order") == {"order", "product"}


def test_an_id_flows_only_into_its_own_entity():
    right = [Step("find_order", (("customer", ("q", "alice")),)),
             Step("get_product", (("product_id", ("ref", 0, "product_id")),))]
    assert chain_problem(SPEC, right) is None
    wrong = [Step("find_order", (("customer", ("q", "alice")),)),
             Step("get_product", (("product_id", ("ref", 0, "order_id")),))]
    assert chain_problem(SPEC, wrong) == "entity_mismatch:get_product.product_id"


def test_a_described_parameter_must_share_a_lineage_with_the_steps_other_inputs():
    """The approver is the manager of *this* employee, not of another one found by a side call."""
    same = [Step("find_employee", (("name", ("q", "bo")),)),
            Step("approve_leave", (("employee_id", ("ref", 0, "employee_id")),
                                   ("approver_id", ("ref", 0, "manager_id"))))]
    assert chain_problem(SPEC, same) is None
    other = [Step("find_employee", (("name", ("q", "bo")),)),
             Step("find_employee", (("name", ("q", "cy")),)),
             Step("approve_leave", (("employee_id", ("ref", 0, "employee_id")),
                                    ("approver_id", ("ref", 1, "manager_id"))))]
    assert chain_problem(SPEC, other) == "entity_mismatch:approve_leave.approver_id"


def test_a_destroyed_entity_is_not_used_by_a_later_write_but_may_be_read():
    find = Step("find_order", (("customer", ("q", "alice")),))
    cancel = Step("cancel_order", (("order_id", ("ref", 0, "order_id")),))
    reorder = Step("reorder", (("order_id", ("ref", 0, "order_id")),))
    check = Step("get_order", (("order_id", ("ref", 0, "order_id")),))
    assert chain_problem(SPEC, [find, cancel, reorder]) == "destructive_then_use:cancel_order>reorder"
    assert chain_problem(SPEC, [find, cancel, check]) is None  # checking the cancelled order is allowed
    assert chain_problem(SPEC, [find, reorder, cancel]) is None  # destroying after the use is not the rule


@pytest.mark.parametrize("doc, expected", [
    (_doc("reset_branch", ["b"], read_only=True), "read"),  # annotations win over the name
    (_doc("list_things", ["b"], destructive=True), "destructive"),
    (_doc("get_thing", ["b"], read_only=False), "write"),
    (_doc("git_reset", ["b"]), "destructive"),  # no annotations: the name decides
    (_doc("delete_file", ["b"]), "destructive"),
    (_doc("git_commit", ["b"]), "write"),
    (_doc("frobnicate", ["b"]), "write"),  # an unknown verb counts as a write: never run on real data
    (_doc("git_status", ["b"]), "read"),
    (_doc("list_branches", ["b"]), "read"),
])
def test_effect_from_annotations_then_the_name(doc, expected):
    assert effect(doc) == expected
