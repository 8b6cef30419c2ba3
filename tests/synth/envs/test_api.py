"""synth/envs/api.py: an episode through the API with the golden calls reaches reward 1.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from synth.envs.api import Environment
from synth.envs.errors import EpisodeError
from synth.envs.io import load_envs

pytestmark = pytest.mark.integration

FIX = Path(__file__).parent / "fixtures"


def test_golden_episode_reaches_reward_one_on_fixture():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    env = Environment(sample)
    assert env.reset() == sample.prompt
    for call in env.golden_calls():
        obs = env.step(call)
        assert "error" not in obs
    assert env.turns == 4 and env.hits() == 4
    assert env.reward() == pytest.approx(1.0)
    # two wasted calls: 4 of 4 in 6 calls -> 0.8 (the seed's worked value)
    env.step({"name": "reservation_finder", "arguments": json.dumps(env.golden_calls()[0]["arguments"])})
    env.step({"name": "hotel_room_finder", "arguments": {"reservation_id": "RES987654"}})
    assert env.reward() == pytest.approx(0.8)


def test_golden_episodes_on_built_samples(built):
    samples, _ = built
    for sample in samples[:3]:
        env = Environment(sample)
        env.reset()
        env.step_many(env.golden_calls())
        assert env.reward() == pytest.approx(1.0), sample.env_id


def test_partial_episode_and_bad_calls():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    env = Environment(sample)
    env.reset()
    golden = env.golden_calls()
    env.step(golden[0])
    env.step(golden[1])
    env.step(golden[2])
    bad = env.step({"name": "no_such_tool", "arguments": {}})
    assert "unknown tool 'no_such_tool'" in bad
    assert "not valid JSON" in env.step({"name": "payment_processor", "arguments": "{oops"})
    assert env.hits() == 3 and env.reward() == pytest.approx(2 * 3 / (4 + 5))
    env.reset()
    assert env.turns == 0 and env.reward() == 0.0


def test_turn_limit_and_finish():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    env = Environment(sample, max_turns=2)
    env.reset()
    call = env.golden_calls()[0]
    env.step_many([call, call])
    assert env.done
    with pytest.raises(EpisodeError, match="allows 2 tool calls"):
        env.step(call)
    env.reset()
    env.finish("done")
    assert env.done
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step(call)


def test_episodes_do_not_share_state():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    a, b = Environment(sample), Environment(sample)
    a.reset()
    b.reset()
    a.step(a.golden_calls()[0])
    assert a.turns == 1 and b.turns == 0


def test_a_looping_call_does_not_poison_the_rest_of_a_batch():
    from synth.envs.models import EnvSample, SandboxLimits

    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    src = "def spin(n):\n    while n:\n        pass\n    return 'never'\n"
    tools = sample.tools + [{"type": "function", "function": {"name": "spin", "description": "spin", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer"}}}}}]
    sources = sample.tool_sources + [sample.tool_sources[0].model_copy(update={"name": "spin", "source": src})]
    s2 = EnvSample.model_validate({**sample.model_dump(by_alias=True), "tools": tools, "tool_sources": sources})
    env = Environment(s2, limits=SandboxLimits(cpu_s=1, wall_s=20))
    env.reset()
    obs = env.step_many([{"name": "spin", "arguments": {"n": 1}}] + env.golden_calls())
    assert "limit exceeded" in obs[0]          # CPU time, or wall clock on a very busy machine
    assert env.hits() == 4 and env.reward() == pytest.approx(2 * 4 / (4 + 5))


def test_a_shared_cache_runs_each_distinct_call_once_across_episodes(built, monkeypatch):
    """Episodes of one sample (a GRPO group) share observations: the second episode starts no sandbox."""
    import synth.envs.api as api

    runs = []
    real = api.run_calls
    monkeypatch.setattr(api, "run_calls", lambda *a, **k: runs.append(1) or real(*a, **k))
    sample = built[0][0]
    cache: dict[str, str] = {}
    first, second = Environment(sample, cache=cache), Environment(sample, cache=cache)
    first.step_many(first.golden_calls())
    assert len(runs) == 1 and len(cache) == len(first.golden_calls())
    second.step_many(second.golden_calls())
    assert len(runs) == 1 and second.reward() == first.reward() == pytest.approx(1.0)
    assert second.turns == len(second.golden_calls())           # cached calls still count as calls
