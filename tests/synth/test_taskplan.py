"""The planning phases: server views, chain pools, task slots."""

from __future__ import annotations

import pytest

from synth.errors import RecipeError
from synth.models import Recipe, ToolDoc
from synth.plans import max_hops
from synth.taskplan import chain_pools, plan_tasks, server_specs


def test_server_specs_cut_to_tool_diversity_and_refuse_bundled_names():
    specs = server_specs(Recipe(tool_diversity=9, seed=2))
    assert sum(len(s.docs) for s in specs.values()) == 9
    doc = ToolDoc(server="travel", name="x", description="x")
    with pytest.raises(RecipeError, match="bundled server name 'travel'"):
        server_specs(Recipe(), {"travel": [doc]})


def test_pools_respect_support_depth_and_count_drops():
    r = Recipe(tool_diversity=16, support_depth=1, seed=1)
    pools = chain_pools(r, server_specs(r))
    kept = [c for p in pools.pools.values() for c in p]
    assert kept and all(max_hops(c.steps, c.turns) <= 1 for c in kept)
    assert pools.n_walks == sum(30 * len(s.docs) * r.max_chain_len for s in pools.specs.values())
    assert pools.dropped["exceeds_support_depth"] > 0


def test_slots_reserve_each_structure_under_a_quota():
    r = Recipe(tool_diversity=24, task_count=80, coverage_quota=0.2, seed=3)
    tasks = plan_tasks(r, chain_pools(r, server_specs(r)))
    got = {s.chain.structure for s in tasks.slots}
    assert got == {"chain", "fan-in", "fan-out", "parallel"}
    assert [s.index for s in tasks.slots] == sorted({s.index for s in tasks.slots})
    assert len(tasks.slots) + sum(v for k, v in tasks.notes.items() if k == "no_valid_chain") == 80
    assert {s.kind for s in tasks.slots} <= {"chain", "server"}
