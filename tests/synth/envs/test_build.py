"""synth/envs/build.py: built samples are valid on their serialized form; bad arguments are rejected."""

from __future__ import annotations

import pytest

from synth.envs.build import build_envs
from synth.envs.qa_graph import structural_problems
from toolscale.errors import UsageError


def test_build_yields_validated_unique_named_samples(built):
    samples, rejected = built
    assert len(samples) == 6 and rejected == []
    assert len({s.env_id for s in samples}) == 6
    for s in samples:
        names = s.tool_names()
        assert len(names) == len(set(names))
        assert structural_problems(s) == []
        assert {d.name for d in s.distractors} <= set(names)
        assert not {d.name for d in s.distractors} & {t.tool for t in s.targets}
        assert s.max_turns == 32 and s.meta["db_id"].startswith(s.domain)
    assert {s.structure for s in samples} & {"multi-hop", "parallel-multi-hop"}


def test_build_is_deterministic(built):
    samples, _ = built
    again = build_envs(2, seed=3, validate=False)
    assert again == samples[:2]


def test_bad_arguments():
    with pytest.raises(UsageError, match=r"unknown domain\(s\) \['atlantis'\]"):
        build_envs(1, domains=["atlantis"])
    with pytest.raises(UsageError, match="unknown tier"):
        build_envs(1, distractors={"extreme": 2})
    with pytest.raises(UsageError, match="n must be"):
        build_envs(-1)


def test_structures_prefix_and_no_repeated_prompt():
    samples = build_envs(4, seed=5, distractors=None, hop_budget=1, validate=False, structures=["single-hop"],
                         id_prefix="x-")
    assert {s.structure for s in samples} == {"single-hop"} and all(s.env_id.startswith("x-") for s in samples)
    assert len({s.prompt for s in samples}) == 4
    more = build_envs(4, seed=5, distractors=None, hop_budget=1, validate=False, structures=["single-hop"],
                      id_prefix="x-", exclude_prompts={samples[0].prompt})
    assert samples[0].prompt not in {s.prompt for s in more}
    with pytest.raises(UsageError, match="need hop_budget >= 2"):
        build_envs(1, hop_budget=1, structures=["multi-hop"])
    with pytest.raises(UsageError, match="structures must be some of"):
        build_envs(1, structures=["zigzag"])
