"""synth/envs/rl_reward.py: the TRL-signature reward function and the environment_factory adapter."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from synth.envs.api import Environment
from synth.envs.errors import EnvError
from synth.envs.rl_reward import TRLToolEnv, extract_tool_calls, grpo_rows, make_reward_fn
from synth.envs.io import load_envs

pytestmark = pytest.mark.integration

FIX = Path(__file__).parent / "fixtures"


def _text(calls):
    return "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)


def test_reward_fn_scores_text_and_conversational_completions():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    golden = Environment(sample).golden_calls()
    fn = make_reward_fn([sample])
    params = inspect.signature(fn).parameters
    assert "prompts" in params and "completions" in params
    convo = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}} for c in golden[:3]]}]
    comps = [_text(golden), _text(golden + golden[:2]), convo, "I cannot help."]
    rewards = fn(prompts=[None] * 4, completions=comps, completion_ids=[[0]] * 4,
                 env_id=[sample.env_id] * 4, trainer_state=None)
    assert rewards == pytest.approx([1.0, 8 / 10, 6 / 7, 0.0])


def test_reward_fn_needs_the_env_id_column():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    fn = make_reward_fn([sample])
    with pytest.raises(EnvError, match="env_id"):
        fn(prompts=["p"], completions=["x"])
    with pytest.raises(EnvError, match="unknown env_id 'zzz'"):
        fn(prompts=["p"], completions=["x"], env_id=["zzz"])


def test_extract_tool_calls_counts_garbage_blocks():
    calls = extract_tool_calls('<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call> <tool_call>{oops</tool_call>')
    assert calls == [{"name": "a", "arguments": {"x": 1}}, {"name": "", "arguments": "{oops"}]
    # a policy may write any JSON: a name that is no string is a wasted call, in text and in tool_calls
    odd = '<tool_call>{"name": {"a": 1}, "arguments": {}}</tool_call>'
    assert extract_tool_calls(odd) == [{"name": "", "arguments": '{"name": {"a": 1}, "arguments": {}}'}]
    msg = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": ["a"], "arguments": {}}}]}
    assert extract_tool_calls([msg]) == [{"name": "", "arguments": {}}]


def test_rows_and_environment_factory_adapter():
    (sample,) = load_envs(FIX / "astra_baggage_fixed.jsonl")
    (row,) = grpo_rows([sample])
    assert row["env_id"] == sample.env_id and row["prompt"][-1]["content"] == sample.prompt
    assert json.loads(row["tools"]) == sample.tools
    env = TRLToolEnv.with_samples([sample])()
    assert env.reset() is None
    assert "reservation_finder" in env.reset(**row)
    for c in Environment(sample).golden_calls():
        env.call_tool(c["name"], json.dumps(c["arguments"]))
    assert env.get_reward() == pytest.approx(1.0)
