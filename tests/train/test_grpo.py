"""GRPO with TRL on synth's executable environments: the F1 reward reaches the trainer, end to end."""

from __future__ import annotations

import json
from pathlib import Path

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
    root = tmp_path_factory.mktemp("policy")
    folder = root / "model"
    build_model(SIZE, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    from train.grpo import golden_rows

    (root / "golden").mkdir()
    (root / "golden" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in golden_rows(envs)))
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
    saved = read_stats(tmp_path)   # TRL generated: 2 N per token of generation, 6 N per token optimized
    assert saved["flops"] == {"generation": 2 * stats.params * stats.train_tokens,
                              "optimization": 6 * stats.params * stats.train_tokens}
    assert stats.train_flops == 8 * stats.params * stats.train_tokens
    assert saved["objective"] == "grpo" and [r["step"] for r in saved["reward_curve"]] == [1, 2]
    assert all(0.0 <= r["reward"] <= 1.0 for r in saved["reward_curve"])
    assert (tmp_path / "model.safetensors").is_file() and (tmp_path / "tokenizer.json").is_file()


def test_bad_arguments(envs, start_model, tmp_path):
    with pytest.raises(UsageError, match="rollout must be one of"):
        train_grpo(envs, start_model, tmp_path, rollout="bogus")
    with pytest.raises(UsageError, match="num_generations must be >= 2"):
        train_grpo(envs, start_model, tmp_path, num_generations=1)
    with pytest.raises(UsageError, match="draw_cap must be a positive integer, got 0"):
        train_grpo(envs, start_model, tmp_path, draw_cap=0)
    with pytest.raises(UsageError, match=r"draw_cap \(1\) must be >= prompts_per_step \(2\)"):
        train_grpo(envs, start_model, tmp_path, draw_cap=1, prompts_per_step=2)
    with pytest.raises(UsageError, match="reward must be one of f1, f1\\+partial"):
        train_grpo(envs, start_model, tmp_path, reward="shaped")
    for beta in (-0.1, float("nan"), True):
        with pytest.raises(UsageError, match=r"beta \(the KL weight\) must be a finite number >= 0"):
            train_grpo(envs, start_model, tmp_path, beta=beta)
    with pytest.raises(UsageError, match="vllm_mode must be 'server' or 'colocate', got 'local'"):
        train_grpo(envs, start_model, tmp_path, vllm_mode="local")
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
    rollout = MultiTurnRollout(envs, tok, num_generations=2, max_completion_length=64, max_context=4096)
    assert rollout.prompt_ids[envs[0].env_id] == tok(rows[0]["prompt"], add_special_tokens=False)["input_ids"]
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
    """One step of the real pipeline: every rollout drawn (kept or not) is in the FLOPs, generation included."""
    torch.set_num_threads(1)
    stats = train_grpo(envs, start_model, tmp_path, max_steps=1, num_generations=2, prompts_per_step=1,
                       draw_cap=2, max_completion_length=16, rollout="multi-turn")
    saved = read_stats(tmp_path)
    assert stats.steps == 1 and saved["rollout"] == "multi-turn" and len(saved["reward_curve"]) == 1
    (row,) = saved["steps"]
    assert row["step"] == 1 and 1 <= row["draws"] <= 2 and row["episodes"] == 2 * row["draws"]
    assert saved["skipped_steps"] == int(row["skipped"])
    assert saved["flops"]["generation"] == pytest.approx(2 * stats.params * row["gen_tokens"])
    assert row["gen_tokens"] > 0
    assert saved["flops"]["optimization"] == pytest.approx(6 * stats.params * stats.train_tokens)
    assert stats.train_flops == pytest.approx(sum(saved["flops"].values()))
    assert (tmp_path / "grpo_steps.jsonl").read_text().count("\n") == 1
    assert saved["beta"] == 0.0 and "kl_curve" not in saved and "reference" not in saved["flops"]


def test_more_groups_per_step_than_environments(envs, start_model, tmp_path):
    """Multi-turn draws its own environments, so 3 groups per step from 2 environments train (TRL's sampler
    alone would yield no batch and stop at step 0); single-turn rows are the prompts, so it is refused."""
    torch.set_num_threads(1)
    stats = train_grpo(envs, start_model, tmp_path / "multi", max_steps=1, num_generations=2, prompts_per_step=3,
                       abf=False, draw_cap=3, max_completion_length=8)
    (row,) = read_stats(tmp_path / "multi")["steps"]
    assert stats.steps == 1 and row["draws"] == 3 and row["episodes"] == 6
    with pytest.raises(UsageError, match="prompts_per_step = 3 needs as many environments; got 2"):
        train_grpo(envs, start_model, tmp_path / "single", max_steps=1, num_generations=2, prompts_per_step=3,
                   draw_cap=3, rollout="single-turn")


def test_kl_anchor_loads_the_start_policy_and_counts_its_pass(envs, start_model, tmp_path):
    """beta > 0: TRL loads the start model again as the reference, logs the KL at every step, and its forward
    pass over the optimized tokens (2 N per token) is in the FLOPs."""
    torch.set_num_threads(1)
    stats = train_grpo(envs, start_model, tmp_path, max_steps=2, num_generations=2, prompts_per_step=1,
                       abf=False, max_completion_length=16, beta=0.5)
    saved = read_stats(tmp_path)
    assert saved["beta"] == 0.5
    assert [e["step"] for e in saved["kl_curve"]] == [1, 2]
    assert saved["kl_curve"][0]["kl"] == pytest.approx(0.0, abs=1e-6)   # step 1: the policy is the reference
    assert all(e["kl"] >= 0 for e in saved["kl_curve"])
    assert saved["flops"]["reference"] == pytest.approx(2 * stats.params * stats.train_tokens)
    assert stats.train_flops == pytest.approx(sum(saved["flops"].values()))


def test_grpo_saves_at_a_stop_request_and_resumes(envs, start_model, tmp_path):
    """A stop request at step 1 of 3 saves checkpoint-1 and raises; the next call resumes from it, keeps the
    step log of step 1 and clears the checkpoints after success when asked."""
    from train.interrupt import Interrupted

    torch.set_num_threads(1)
    seen = {"step": 0}
    kw = dict(max_steps=3, num_generations=2, prompts_per_step=1, draw_cap=1, max_completion_length=12, seed=1)
    with pytest.raises(Interrupted, match="checkpoint saved at step 1 of 3"):
        train_grpo(envs, start_model, tmp_path, on_step=lambda s, n, _loss: seen.update(step=s),
                   should_stop=lambda: "SIGTERM received" if seen["step"] >= 1 else None, **kw)
    assert [p.name for p in (tmp_path / "checkpoints").glob("checkpoint-*")] == ["checkpoint-1"]
    stats = train_grpo(envs, start_model, tmp_path, keep_checkpoints=False, **kw)
    saved = read_stats(tmp_path)
    assert stats.steps == 3 and saved["resumed_from"] == "checkpoint-1" and saved["generation"] == "transformers"
    assert [r["step"] for r in saved["reward_curve"]][-1] == 3 and not (tmp_path / "checkpoints").exists()
    assert [r["step"] for r in saved["steps"]] == [1, 2, 3]


def _scripted_run(envs, start_model, folder, *, with_skip: bool, negative_weight: float = 1.0):
    """Three real TRL steps whose rollouts are scripted: steps 1 and 3 hold a group with a win and a loss,
    step 2 only losses. Returns the lm_head weights before training and after each step, and the step log."""
    from datasets import Dataset
    from transformers import TrainerCallback

    from tests.train.scripted import FAIL, GOLD, ScriptedPolicy
    from train.grpo import _trainer, env_reward, grpo_config
    from train.proxy import load_model
    from train.rollout import MultiTurnRollout, skip_callback
    from train.tokenizer import load_tokenizer

    tok = load_tokenizer(start_model)
    tok.padding_side = "left"
    model = load_model(start_model)
    policy = ScriptedPolicy(envs, tok, lambda s, k: FAIL if policy.step == 1 else (GOLD if k % 2 else FAIL))
    model.generate = policy.generate
    roll = MultiTurnRollout(envs, tok, num_generations=2, max_completion_length=64, max_context=4096, abf=True,
                            draw_cap=2, max_steps=3, log_path=folder / "steps.jsonl")
    snaps = []

    class Watch(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            policy.step = state.global_step

        def on_step_end(self, args, state, control, model=None, **kwargs):
            snaps.append(model.lm_head.weight.detach().clone())

    config = grpo_config(folder / "ck", max_steps=3, learning_rate=1e-2, num_generations=2, prompts_per_step=1,
                         max_completion_length=64)
    callbacks = [Watch()] + ([skip_callback(roll)] if with_skip else [])
    trainer = _trainer(model, tok, Dataset.from_list(grpo_prompts(envs, tok)), config, env_reward, callbacks, roll,
                       negative_weight)
    before = model.lm_head.weight.detach().clone()
    trainer.train()
    return before, snaps, roll.read_log()


def test_a_skipped_step_moves_no_weight(envs, start_model, tmp_path):
    """ABF's skipped step is a true no-op: with zero gradients alone Adam's momentum would still move the
    weights after an update (the run without the skip callback shows it); with it, nothing moves."""
    before, snaps, log = _scripted_run(envs, start_model, tmp_path / "skip", with_skip=True)
    assert [r["skipped"] for r in log] == [False, True, False] and [r["draws"] for r in log][1] == 2
    assert not torch.equal(before, snaps[0]) and torch.equal(snaps[0], snaps[1]) and not torch.equal(snaps[1], snaps[2])
    _, moved, _ = _scripted_run(envs, start_model, tmp_path / "noskip", with_skip=False)
    assert not torch.equal(moved[0], moved[1])


def test_negative_weight_scales_only_the_advantages_below_zero(envs, start_model, tmp_path, monkeypatch):
    """negative_weight = 0: the loss sees the wins' advantages unchanged and the losses' as 0; 1 is GRPO."""
    from trl import GRPOTrainer

    seen = []
    original = GRPOTrainer._compute_loss

    def record(self, model, inputs):
        seen.append(inputs["advantages"].detach().clone())
        return original(self, model, inputs)

    monkeypatch.setattr(GRPOTrainer, "_compute_loss", record)
    _scripted_run(envs, start_model, tmp_path / "grpo", with_skip=True)
    grpo = torch.cat(seen)
    seen.clear()
    _scripted_run(envs, start_model, tmp_path / "pos", with_skip=True, negative_weight=0.0)
    pos = torch.cat(seen)
    assert (grpo < 0).any() and (grpo > 0).any()
    assert torch.equal(pos, grpo.clamp(min=0))
    with pytest.raises(UsageError, match=r"negative_weight must be a number in \[0, 1\], got 1.5"):
        train_grpo(envs, start_model, tmp_path / "bad", negative_weight=1.5)


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(str(Path(folder) / "model.safetensors"))


def test_warm_start_trains_on_the_golden_episodes_that_earn_one(envs, start_model, tmp_path):
    from train.grpo import warm_start
    from train.sft import train_sft

    sft = tmp_path / "sft"
    train_sft(start_model.parent / "golden", SIZE.model_copy(update={"max_steps": 2, "batch_size": 1}), sft,
              save_steps=0)
    stats = warm_start(envs, sft, SIZE.model_copy(update={"batch_size": 1}), tmp_path / "warm", steps=2)
    rows = [json.loads(line) for line in (tmp_path / "warm" / "data" / "train.jsonl").read_text().splitlines()]
    assert len(rows) == len(envs) and all(json.loads(r["meta"])["env_reward"] == 1.0 for r in rows)
    assert rows[0]["messages"][0]["content"].startswith("You are a careful assistant with access to the")
    assert stats.steps == 2 and (tmp_path / "warm" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "warm" / "run.json").read_text())["init"]["steps"] == 2   # started from the SFT run
    with pytest.raises(UsageError, match="warm-start steps must be a positive integer"):
        warm_start(envs, sft, SIZE, tmp_path / "w2", steps=0)
    # copy drills: an auxiliary loss at every step, on the episodes' data unchanged; its record is written
    warm_start(envs, sft, SIZE.model_copy(update={"batch_size": 1}), tmp_path / "drilled", steps=2, copy_drills=3)
    assert (tmp_path / "drilled" / "data" / "train.jsonl").read_text() == (
        tmp_path / "warm" / "data" / "train.jsonl").read_text()
    record = json.loads((tmp_path / "drilled" / "copy_drills.json").read_text())
    assert record["sequences"] == 3 and record["steps_drilled"] == 2
    assert record["first_list_nll"] > 0 and record["repeat_nll"] > 0
    assert json.loads((tmp_path / "drilled" / "run.json").read_text())["aux_loss"]["sequences"] == 3
    drilled, plain = _weights(tmp_path / "drilled"), _weights(tmp_path / "warm")   # same data, seed and steps
    assert any(not torch.equal(drilled[k], plain[k]) for k in drilled)   # the drill loss moved the weights
    with pytest.raises(UsageError, match="copy drills must be a non-negative integer"):
        warm_start(envs, sft, SIZE, tmp_path / "w3", steps=1, copy_drills=-1)


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
