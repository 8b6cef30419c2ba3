"""synth/envs/curriculum.py: phases in order, their shapes and distractors, disjoint sets, bad sizes refused."""

from __future__ import annotations

import pytest

from synth.envs.curriculum import CURRICULUM, build_curriculum, phase_of, phases_of
from synth.envs.qa_graph import structural_problems, to_digraph, tool_hops
from toolscale.errors import UsageError


@pytest.fixture(scope="module")
def curriculum():
    return build_curriculum(6, seed=2, validate=False)


def test_phases_single_hop_then_multi_hop_then_parallel_with_distractors(curriculum):
    groups = phases_of(curriculum)
    assert [len(g) for g in groups] == [2, 2, 2] and [phase_of(g[0]) for g in groups] == [0, 1, 2]
    assert {s.structure for s in groups[0]} == {"single-hop"} and all(not s.distractors for s in groups[0])
    assert {s.structure for s in groups[1]} == {"multi-hop"} and all(not s.distractors for s in groups[1])
    assert all(tool_hops(to_digraph(s.nodes)) >= 2 for s in groups[1])
    assert {s.structure for s in groups[2]} == {"parallel-multi-hop"}
    assert all(len(s.distractors) + sum(s.meta["distractor_shortfall"].values()) == 5 for s in groups[2])
    assert [s.meta["phase_name"] for s in curriculum] == [p.name for p in CURRICULUM for _ in range(2)]
    assert all(structural_problems(s) == [] for s in curriculum)
    assert len({s.env_id for s in curriculum}) == len({s.prompt for s in curriculum}) == 6


def test_a_second_set_is_disjoint_and_bad_sizes_are_refused(curriculum):
    other = build_curriculum(3, seed=2, validate=False, id_prefix="warm-",
                             exclude_prompts={s.prompt for s in curriculum})
    assert not {s.prompt for s in other} & {s.prompt for s in curriculum}
    assert all(s.env_id.startswith("warm-p") for s in other)
    with pytest.raises(UsageError, match="needs n >= 3"):
        build_curriculum(2, seed=0)
