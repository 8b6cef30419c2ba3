"""RL environments of the code domain: the reward is the share of tests passed, F1-style against calls made."""

from __future__ import annotations

import pytest

from synth.code.env import CodeEnvironment, build_code_envs, code_reward, dump_code_envs, load_code_envs
from synth.code.models import SuiteResult
from synth.envs.errors import EpisodeError


@pytest.fixture(scope="module")
def sample():
    return build_code_envs(2, seed=4)[0]


def test_golden_calls_earn_one_and_twice_the_calls_two_thirds(sample):
    env = CodeEnvironment(sample)
    assert env.reset() == sample.prompt
    for c in env.golden_calls():
        env.step(c)
    assert env.reward() == 1.0 and env.tests().all_passed
    n = len(sample.golden_calls)
    assert code_reward(SuiteResult(passed=4, total=4), calls=2 * n, golden=n) == pytest.approx(2 / 3)
    assert code_reward(SuiteResult(passed=2, total=4), calls=n, golden=n) == pytest.approx(2 / 3)


def test_no_code_no_reward_and_bad_calls_count(sample):
    env = CodeEnvironment(sample)
    assert env.step({"name": "read_file", "arguments": "{not json"}).startswith("error: arguments of read_file")
    assert env.step({"function": {"name": "list_files", "arguments": {"path": "nowhere"}}}).startswith("error:")
    assert env.turns == 2 and env.reward() == 0.0


def test_a_wrong_module_earns_partial_reward(sample):
    env = CodeEnvironment(sample)
    golden = env.golden_calls()
    for c in golden[:-2]:  # everything but the last function's write and the test run
        env.step(c)
    res = env.tests()
    assert 0 < res.passed < res.total
    assert 0 < env.reward() < 1


def test_episode_limits_and_round_trip(tmp_path, sample):
    env = CodeEnvironment(sample, max_turns=2)
    env.step_many([{"name": "list_files", "arguments": {"path": ""}}] * 2)
    assert env.done
    with pytest.raises(EpisodeError, match="allows 2 tool calls"):
        env.step({"name": "list_files", "arguments": {"path": ""}})
    env.reset()
    env.finish("done")
    with pytest.raises(EpisodeError, match="episode is over"):
        env.step({"name": "list_files", "arguments": {"path": ""}})
    dump_code_envs([sample], tmp_path / "e.jsonl")
    assert load_code_envs(tmp_path / "e.jsonl") == [sample]
