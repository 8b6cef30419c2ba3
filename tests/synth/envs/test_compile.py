"""synth/envs/compile.py: compiled lookup tools run in the sandbox; merging keeps names unique."""

from __future__ import annotations

import json

import pytest

from synth.envs.compile import lookup_tool, merge_tools, singular
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
    assert schema["function"]["name"] == "get_order_by_order_id"
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
    assert [t.name for t in merged] == ["get_order_by_order_id", "get_order_by_order_id_2"]
    assert names == ["get_order_by_order_id", "get_order_by_order_id", "get_order_by_order_id_2"]
    assert len(merged[0].rows) == 2          # union, nothing dropped
    assert len({t.name for t in merged}) == len(merged)


def test_naive_name_merge_would_drop_a_tool():
    # The defect of the public release: indexing by name keeps one of two different tools.
    a = lookup_tool("shop", "orders", "order_id", ROWS)
    c = lookup_tool("banking", "orders", "order_id", [{"order_id": "X"}])
    assert len({t.name: t for t in (a, c)}) == 1
    merged, _ = merge_tools([a, c])
    assert len(merged) == 2
