"""Batched multi-turn GRPO rollouts: tool turns rendered by the policy's own template (Qwen3's included), one
generation call per turn for all episodes, observation tokens out of the loss; GRPO checkpoints and resumes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from toolscale.config import ModelSize
from train.rollout import BatchedRollout, observation_suffix

SIZE = ModelSize(name="rl", hidden_size=32, num_layers=1, num_heads=2, vocab_size=600, max_seq_len=4096)


@pytest.fixture(scope="module")
def envs():
    from synth.envs.build import build_envs

    return build_envs(2, seed=0)


def _golden(sample) -> list[dict]:
    from synth.envs.api import Environment

    return Environment(sample).golden_calls()


@pytest.fixture(scope="module")
def policy(envs, tmp_path_factory):
    """A proxy policy folder whose tokenizer knows the prompts and the golden plans."""
    from synth.envs.rl_reward import grpo_rows

    from train.chat import render
    from train.proxy import build_model
    from train.tokenizer import train_tokenizer

    texts = [render(r["prompt"], r["tools"], add_generation_prompt=True)
             + "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in _golden(s)) + "<|im_end|>"
             for r, s in zip(grpo_rows(envs), envs, strict=True)]
    tok = train_tokenizer(texts * 4, SIZE.vocab_size)
    folder = tmp_path_factory.mktemp("policy")
    build_model(SIZE, seed=0).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_tool_turns_follow_the_policys_template(tokenizer):
    assert observation_suffix(tokenizer, ["a", "b"]) == (
        "\n<|im_start|>tool\n<tool_response>a</tool_response><|im_end|>\n"
        "<|im_start|>tool\n<tool_response>b</tool_response><|im_end|>\n<|im_start|>assistant\n")
    import trl.chat_template_utils as ctu

    qwen3 = copy.deepcopy(tokenizer)
    qwen3.chat_template = (Path(ctu.__file__).parent / "chat_templates" / "qwen3_training.jinja").read_text()
    assert observation_suffix(qwen3, ["a", "b"]) == (  # Qwen3: tool results come back in a user turn
        "\n<|im_start|>user\n<tool_response>\na\n</tool_response>\n<tool_response>\nb\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n")


class _Scripted(BatchedRollout):
    """The rollout loop with a scripted policy (the golden plan, one call per turn): tests the batching,
    the environments and the masks; generation itself runs in the GRPO smoke runs."""

    def __init__(self, *args, plans, **kwargs):
        super().__init__(*args, **kwargs)
        self.plans, self.batches = plans, []

    def _generate(self, trainer, contexts, budgets):
        self.generate_calls += 1
        self.batches.append(len(contexts))
        out = []
        for ctx, budget in zip(contexts, budgets, strict=True):
            prompt, ids = next((p, ids) for p, ids in self.prompt_of.items() if ctx[:len(ids)] == ids)
            plan = self.plans[prompt]
            turn = sum(1 for t in ctx[len(ids):] if t == self.tokenizer.convert_tokens_to_ids("<tool_call>"))
            text = (f"<tool_call>{json.dumps(plan[turn])}</tool_call>" if turn < len(plan) else "Done.") + "<|im_end|>"
            out.append(self.tokenizer(text, add_special_tokens=False)["input_ids"][:budget])
        return out


def test_all_episodes_advance_together_and_observations_carry_no_loss(envs, policy):
    from train.grpo import grpo_prompts
    from train.tokenizer import load_tokenizer

    tok = load_tokenizer(policy)
    rows = grpo_prompts(envs, tok)
    prompts = [r["prompt"] for r in rows] * 2  # a GRPO group of 2 per environment: 4 episodes
    plans = {r["prompt"]: _golden(s) for r, s in zip(rows, envs, strict=True)}
    rollout = _Scripted(envs, rows, tok, max_completion_length=2048, plans=plans)
    rollout.prompt_of = {r["prompt"]: tok(r["prompt"], add_special_tokens=False)["input_ids"] for r in rows}
    trainer = SimpleNamespace(model=torch.nn.Linear(1, 1), args=SimpleNamespace(use_vllm=False))
    out = rollout(prompts, trainer)
    longest = max(len(p) for p in plans.values())
    assert rollout.generate_calls == longest + 1  # one call per turn for every episode, not one per episode
    assert rollout.batches[0] == 4
    assert out["env_reward"] == [1.0] * 4  # the golden plan, run in the real environments, earns full F1
    for ids, mask in zip(out["completion_ids"], out["env_mask"], strict=True):
        assert len(ids) == len(mask) and 0 in mask and mask[0] == 1
        learned = tok.decode([t for t, m in zip(ids, mask) if m])
        unseen = tok.decode([t for t, m in zip(ids, mask) if not m])
        assert "<tool_call>" in learned and "<tool_response>" not in learned
        assert unseen.count("<tool_response>") >= 1 and unseen.endswith("<|im_start|>assistant\n")


def test_grpo_saves_at_a_stop_request_and_resumes(envs, policy, tmp_path):
    """A stop request at step 1 of 3 saves checkpoint-1 and raises; the next call resumes from it."""
    from train.grpo import train_grpo
    from train.interrupt import Interrupted
    from train.sft import read_stats

    torch.set_num_threads(1)
    seen = {"step": 0}
    kw = dict(max_steps=3, num_generations=2, max_completion_length=12, rollout="multi-turn", seed=1)
    with pytest.raises(Interrupted, match="checkpoint saved at step 1 of 3"):
        train_grpo(envs, policy, tmp_path, on_step=lambda s, n, l: seen.update(step=s),
                   should_stop=lambda: "SIGTERM received" if seen["step"] >= 1 else None, **kw)
    assert [p.name for p in (tmp_path / "checkpoints").glob("checkpoint-*")] == ["checkpoint-1"]
    stats = train_grpo(envs, policy, tmp_path, keep_checkpoints=False, **kw)
    saved = read_stats(tmp_path)
    assert stats.steps == 3 and saved["resumed_from"] == "checkpoint-1" and saved["generation"] == "transformers"
    assert [r["step"] for r in saved["reward_curve"]][-1] == 3 and not (tmp_path / "checkpoints").exists()
