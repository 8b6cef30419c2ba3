"""GRPO with TRL on synth's executable environments: the F1 reward reaches the trainer, end to end."""

from __future__ import annotations

import json

import pytest
import torch

from grid.models import TrainStats
from toolscale.config import ModelSize
from toolscale.errors import UsageError
from train.grpo import grpo_prompts, load_env_samples, train_grpo
from train.sft import read_stats

SIZE = ModelSize(name="rl", hidden_size=32, num_layers=1, num_heads=2, vocab_size=600, max_seq_len=4096)


def _golden_text(env_sample) -> str:
    from synth.envs.api import Environment

    calls = Environment(env_sample).golden_calls()
    return "\n".join(f"<tool_call>{json.dumps(c, ensure_ascii=False)}</tool_call>" for c in calls) + "<|im_end|>"


@pytest.fixture(scope="module")
def envs():
    from synth.envs.build import build_envs

    return build_envs(2, seed=0)


@pytest.fixture(scope="module")
def start_model(envs, tmp_path_factory):
    """A proxy policy saved as a folder: tokenizer trained on the rendered prompts and golden plans."""
    from synth.envs.rl_reward import grpo_rows

    from train.chat import render
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    texts = [render(r["prompt"], r["tools"], add_generation_prompt=True) + _golden_text(s)
             for r, s in zip(grpo_rows(envs), envs, strict=True)]
    tokenizer = train_tokenizer(texts * 4, SIZE.vocab_size)
    folder = tmp_path_factory.mktemp("policy")
    build_model(SIZE, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_reward_wiring_scores_golden_plans_one(envs, start_model):
    """The rows train_grpo feeds TRL, through synth's reward function: golden plans 1.0, partial less."""
    from synth.envs.rl_reward import make_reward_fn

    from train.tokenizer import load_tokenizer

    rows = grpo_prompts(envs, load_tokenizer(start_model))
    assert all(r["prompt"].endswith("<|im_start|>assistant\n") and "<tools>" in r["prompt"] for r in rows)
    reward = make_reward_fn(envs)
    golden = [_golden_text(s) for s in envs]
    ids = [r["env_id"] for r in rows]
    assert reward(prompts=[r["prompt"] for r in rows], completions=golden, env_id=ids) == [1.0, 1.0]
    partial = [g.split("</tool_call>")[0] + "</tool_call>" for g in golden]
    assert all(0 < x < 1 for x in reward(prompts=None, completions=partial, env_id=ids))
    assert reward(prompts=None, completions=["no call", "<tool_call>{oops</tool_call>"], env_id=ids) == [0.0, 0.0]


def test_single_turn_smoke_run(envs, start_model, tmp_path):
    torch.set_num_threads(1)
    stats = train_grpo(envs, start_model, tmp_path, max_steps=2, num_generations=2, max_completion_length=16,
                       rollout="single-turn")
    assert isinstance(stats, TrainStats) and stats.steps == 2
    assert stats.params == SIZE.approx_params and stats.train_tokens > 0
    assert stats.train_flops == 6 * stats.params * stats.train_tokens
    saved = read_stats(tmp_path)
    assert saved["objective"] == "grpo" and [r["step"] for r in saved["reward_curve"]] == [1, 2]
    assert all(0.0 <= r["reward"] <= 1.0 for r in saved["reward_curve"])
    assert (tmp_path / "model.safetensors").is_file() and (tmp_path / "tokenizer.json").is_file()


def test_bad_arguments(envs, start_model, tmp_path):
    with pytest.raises(UsageError, match="rollout must be one of"):
        train_grpo(envs, start_model, tmp_path, rollout="bogus")
    with pytest.raises(UsageError, match="num_generations must be >= 2"):
        train_grpo(envs, start_model, tmp_path, num_generations=1)
    with pytest.raises(UsageError, match="does not exist"):
        load_env_samples(tmp_path / "envs.jsonl")
    with pytest.raises(UsageError, match="at least one"):
        load_env_samples([])


def test_observations_match_the_chat_template(envs, start_model):
    """What the multi-turn rollout appends after a call is exactly what the template renders for tool turns."""
    from synth.envs.api import Environment

    from train.chat import normalize_messages
    from train.grpo import MultiTurnRollout
    from train.tokenizer import load_tokenizer

    tok = load_tokenizer(start_model)
    rows = grpo_prompts(envs, tok)
    rollout = MultiTurnRollout(envs, rows, tok, max_completion_length=64)
    env = Environment(envs[0])
    calls = env.golden_calls()[:2]
    observations = env.step_many(calls)
    turn = "\n".join(f"<tool_call>{json.dumps(c, ensure_ascii=False)}</tool_call>" for c in calls) + "<|im_end|>"
    from synth.envs.rl_reward import grpo_rows

    prompt = grpo_rows(envs[:1])[0]
    assistant = {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(calls)]}
    tools = [{"role": "tool", "content": o, "tool_call_id": f"call_{i}"} for i, o in enumerate(observations)]
    full = tok.apply_chat_template(normalize_messages(prompt["prompt"] + [assistant] + tools),
                                   tools=json.loads(prompt["tools"]), tokenize=False, add_generation_prompt=True)
    pieces = tok(rows[0]["prompt"] + turn, add_special_tokens=False)["input_ids"] + rollout._observation_ids(observations)
    assert tok.decode(pieces) == full
    assert pieces == tok(full, add_special_tokens=False)["input_ids"]


def test_multi_turn_smoke_run(envs, start_model, tmp_path):
    torch.set_num_threads(1)
    stats = train_grpo(envs, start_model, tmp_path, max_steps=1, num_generations=2, max_completion_length=16,
                       rollout="multi-turn")
    saved = read_stats(tmp_path)
    assert stats.steps == 1 and saved["rollout"] == "multi-turn" and len(saved["reward_curve"]) == 1


@pytest.mark.slow
def test_sft_warm_start_then_multi_turn_grpo_earns_reward(envs, tmp_path):
    """End to end: SFT on the golden episodes, then multi-turn GRPO rollouts hit targets (reward > 0)."""
    from train.grpo import golden_rows
    from train.sft import train_sft

    torch.set_num_threads(2)
    rows = golden_rows(envs)
    assert all(json.loads(r["meta"])["env_reward"] == 1.0 for r in rows)
    data = tmp_path / "golden"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    size = ModelSize(name="warm", hidden_size=64, num_layers=2, num_heads=2, vocab_size=800, max_seq_len=2048,
                     max_steps=150, batch_size=2, learning_rate=3e-3)
    sft = train_sft(data, size, tmp_path / "sft", save_steps=0)
    assert sft.final_loss < 0.5
    train_grpo(envs, tmp_path / "sft", tmp_path / "rl", max_steps=2, num_generations=4, max_completion_length=200,
               learning_rate=1e-5)
    rewards = [r["reward"] for r in read_stats(tmp_path / "rl")["reward_curve"]]
    assert max(rewards) > 0.2
