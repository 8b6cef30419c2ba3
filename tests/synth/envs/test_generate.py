"""synth/envs/generate.py: QA graphs over real rows of the seeded databases."""

from __future__ import annotations

import random

import pytest

from synth.envs.generate import fk_paths, profile_database, sample_plan
from synth.envs.qa_graph import to_digraph, tool_hops
from synth.envs.reward import canonical_answer
from synth.servers.db import make_database


def test_profile_finds_keys_and_foreign_keys():
    prof = profile_database(make_database("shop", 0, 0))
    assert prof.keys["orders"][0] == "order_id"
    fks = {(f.table, f.column, f.ref.table, f.ref.column) for f in prof.fks}
    assert ("orders", "customer_id", "customers", "customer_id") in fks
    assert ("orders", "product_id", "products", "product_id") in fks
    assert any(len(p) == 2 for p in fk_paths(prof, "shipments", 2))


@pytest.mark.parametrize("structure", ["multi-hop", "parallel-multi-hop"])
@pytest.mark.parametrize("domain", ["shop", "hr", "banking"])
def test_plan_facts_are_real_rows(domain, structure):
    db = make_database(domain, 1, 1)
    plan = sample_plan(db, domain, random.Random(7), hop_budget=3, structure=structure)
    assert plan is not None and plan.structure == structure
    g = to_digraph(plan.nodes)
    assert 2 <= tool_hops(g) <= 3
    for node in plan.nodes:
        if node.tool is None:
            continue
        tool = plan.tools[node.id]
        ((key, value),) = node.arguments.items()
        rows = [r for r in db[tool.table] if r[key] == value]
        assert len(rows) == 1                                # the lookup key is unique
        assert node.answer in {canonical_answer(v) for v in rows[0].values()}   # a real fact of that row
    if structure == "parallel-multi-hop":
        (sink,) = [n for n in plan.nodes if not any(n.id in m.depends_on for m in plan.nodes)]
        assert sink.tool is None and sink.answer == plan.main_answer
        assert sum(1 for n in plan.nodes if n.mode == "parallel") == 2


def test_hop_budget_is_respected_and_seeded():
    db = make_database("hr", 0, 0)
    plans = [sample_plan(db, "hr", random.Random(s), hop_budget=2, structure="multi-hop") for s in range(5)]
    assert all(p is not None and tool_hops(to_digraph(p.nodes)) <= 2 for p in plans)
    again = sample_plan(db, "hr", random.Random(0), hop_budget=2, structure="multi-hop")
    assert again.nodes == plans[0].nodes


def test_no_multi_hop_without_foreign_keys():
    db = {"things": [{"thing_id": "T1", "name": "a", "size": 1}, {"thing_id": "T2", "name": "b", "size": 2}]}
    assert sample_plan(db, "x", random.Random(0), structure="multi-hop", attempts=5) is None
    single = sample_plan(db, "x", random.Random(0), structure="single-hop")
    assert single is not None and len(single.nodes) == 1


@pytest.mark.parametrize("domain", ["travel", "banking", "shop", "calendar", "hr", "library"])
def test_no_hop_returns_its_own_input_and_names_are_the_sft_names(domain):
    """A hop asks a field its tool returns other than the key it was called with, so every golden call is
    needed: the answer never equals the argument. Lookups the catalogue documents carry its names."""
    from synth.envs.compile import aligned_spec
    from synth.servers.catalog import SERVERS

    db = make_database(domain, 4, 2)
    gets = {t.name for t in SERVERS[domain].tools if t.kind == "get"}
    for seed in range(12):
        plan = sample_plan(db, domain, random.Random(seed), hop_budget=3)
        if plan is None:
            continue
        for node in plan.nodes:
            if node.tool is None:
                continue
            tool = plan.tools[node.id]
            ((key, value),) = node.arguments.items()
            assert node.answer != canonical_answer(value), (seed, node.question)
            assert tool.name == aligned_spec(domain, tool.table, key).name
            assert node.question.startswith("What is the ") and " of the " in node.question
            if tool.name in gets:   # the question asks a field under the name the tool returns it by
                asked = node.question.removeprefix("What is the ").split(" of the ")[0]
                assert asked in tool.fields()
