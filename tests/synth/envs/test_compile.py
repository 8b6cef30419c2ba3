"""synth/envs/compile.py: compiled lookup tools run in the sandbox, named and shaped like the SFT tools; merging
keeps names unique."""

from __future__ import annotations

import json

import pytest

from synth.envs.compile import aligned_spec, lookup_tool, merge_tools, singular
from synth.envs.models import SandboxLimits
from synth.envs.sandbox import run_calls

ROWS = [{"order_id": "OR-1", "customer_id": "CU-7", "total": 12.5},
        {"order_id": "OR-2", "customer_id": "CU-8", "total": 40.0}]


def test_singular():
    assert [singular(t) for t in ("orders", "categories", "boxes", "nutrition", "class")] == \
        ["order", "category", "box", "nutrition", "class"]


@pytest.mark.integration
def test_compiled_tool_returns_the_row_in_the_sandbox():
    tool = lookup_tool("shop", "orders", "order_id", ROWS)
    schema = tool.schema()
    assert schema["function"]["name"] == "get_order"
    assert schema["function"]["parameters"]["required"] == ["order_id"]
    src = tool.source()
    run = run_calls({src.name: src.source}, [{"name": src.name, "arguments": {"order_id": "or-2 "}},
                                             {"name": src.name, "arguments": {"order_id": "OR-9"}}],
                    limits=SandboxLimits(cpu_s=2, wall_s=5))
    assert run.status == "ok"
    assert json.loads(run.calls[0].output) == ROWS[1]
    assert "error" in json.loads(run.calls[1].output)


def test_merge_unions_same_signature_and_renames_different_ones():
    a = lookup_tool("shop", "orders", "order_id", ROWS[:1])
    b = lookup_tool("shop", "orders", "order_id", ROWS)
    c = lookup_tool("banking", "orders", "order_id", [{"order_id": "X"}])   # same name, other behaviour
    merged, names = merge_tools([a, b, c])
    assert [t.name for t in merged] == ["get_order", "get_order_2"]
    assert names == ["get_order", "get_order", "get_order_2"]
    assert len(merged[0].rows) == 2          # union, nothing dropped
    assert len({t.name for t in merged}) == len(merged)


def test_naive_name_merge_would_drop_a_tool():
    # The defect of the public release: indexing by name keeps one of two different tools.
    a = lookup_tool("shop", "orders", "order_id", ROWS)
    c = lookup_tool("banking", "orders", "order_id", [{"order_id": "X"}])
    assert len({t.name: t for t in (a, c)}) == 1
    merged, _ = merge_tools([a, c])
    assert len(merged) == 2


def test_lookups_are_named_and_shaped_like_the_sft_tools():
    """A lookup the catalogue documents takes its name, description and output fields (renames included);
    other id lookups follow the catalogue's get_<entity> convention; other keys say which column they use."""
    from synth.servers.catalog import SERVERS

    flight = {"flight_id": "FL1", "airline": "Aurora", "origin": "Oslo", "destination": "Rome", "date": "2026-01-02",
              "price": 99.5, "seats": 3, "updated_at": "2026-01-01"}
    tool = lookup_tool("travel", "flights", "flight_id", [flight])
    doc = SERVERS["travel"].tool("get_flight")
    assert tool.name == "get_flight" and tool.schema()["function"]["description"] == doc.description
    assert tool.fields() == doc.output_fields()              # arrival_city, seats_left: the SFT tool's fields
    assert tool.record(flight)["arrival_city"] == "Rome" and "updated_at" not in tool.record(flight)
    assert aligned_spec("shop", "customers", "customer_id").name == "get_customer"
    assert aligned_spec("banking", "accounts", "account_id").name == "get_balance"
    assert aligned_spec("hr", "employees", "name").name == "get_employee_by_name"
    catalog = {t.name for s in SERVERS.values() for t in s.tools}
    assert aligned_spec("shop", "shipments", "shipment_id").name not in catalog
