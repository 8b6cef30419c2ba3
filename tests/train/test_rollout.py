"""train/rollout.py: policy-token budgets, the curriculum sampler, Adaptive Batch Filling and its accounting;
tool turns rendered by the policy's own template (Qwen3's included), one generation call per turn for all the
episodes of a round of draws; GRPO saves at a stop request and resumes.

Generation is scripted (tests/train/scripted.py) so that the rewards are known; environments, sandbox, tokenizer
and chat template are real.
"""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.train.scripted import FAIL, GOLD, ScriptedPolicy
from train.rollout import EnvSampler, MultiTurnRollout, observation_suffix

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def envs():
    from synth.envs.curriculum import build_curriculum

    return build_curriculum(6, seed=4, validate=False)


@pytest.fixture(scope="module")
def tok(envs):
    from train.budget import golden_texts
    from train.tokenizer import train_tokenizer

    return train_tokenizer([golden_texts(s)[1] for s in envs] * 3, 700)


def _trainer(policy, step=0):
    return SimpleNamespace(model=policy, state=SimpleNamespace(global_step=step))


def test_a_perfect_policy_scores_one_at_the_default_budget(envs, tok):
    """Observations do not count against max_completion_length: at the default budget a perfect policy earns
    F1 = 1 on every phase, with or without a rationale before each call; a budget too small for the calls binds."""
    from toolscale.config import TrainSpec
    from train.grpo import train_grpo

    default = inspect.signature(train_grpo).parameters["max_completion_length"].default
    assert TrainSpec().grpo_max_completion_length == default
    roll = MultiTurnRollout(envs, tok, num_generations=2, max_completion_length=default, max_context=8192)
    for rationale in (False, True):
        episodes = [e for s in envs for e in roll.group(ScriptedPolicy(envs, tok, rationale=rationale), s)]
        assert [e.f1 for e in episodes] == [1.0] * 12
        assert all(sum(e.env_mask) <= default and 0 in e.env_mask for e in episodes)   # observations: mask 0
        assert any(len(e.completion_ids) > sum(e.env_mask) + 50 for e in episodes)    # records shown, not counted
    tight = MultiTurnRollout(envs, tok, num_generations=1, max_completion_length=40, max_context=8192)
    f1 = {s.structure: tight.episode(ScriptedPolicy(envs, tok), s).f1 for s in envs}
    assert f1["single-hop"] == 1.0 and f1["parallel-multi-hop"] < 1.0


def test_the_sampler_goes_through_the_phases_in_order(envs):
    sampler = EnvSampler(envs, max_steps=6, seed=0)
    assert [sampler.phase_at(s) for s in range(7)] == [0, 0, 1, 1, 2, 2, 2]
    drawn = [sampler.draw(s).meta["phase"] for s in range(6) for _ in range(3)]
    assert drawn == [0] * 6 + [1] * 6 + [2] * 6
    plain = [s.model_copy(update={"meta": {}}) for s in envs]
    assert EnvSampler(plain, max_steps=6).phase_at(5) == 0


def test_abf_keeps_only_groups_whose_rewards_differ_and_skips_at_the_cap(envs, tok, tmp_path):
    single = [s for s in envs if s.meta["phase"] == 0]
    varied, flat = single[0], single[1]
    plan = {varied.env_id: lambda k: GOLD if k % 2 else FAIL, flat.env_id: lambda k: FAIL}
    policy = ScriptedPolicy(single, tok, lambda s, k: plan[s.env_id](k))
    roll = MultiTurnRollout(single, tok, num_generations=2, max_completion_length=128, max_context=8192,
                            abf=True, draw_cap=3, params=1000.0, log_path=tmp_path / "steps.jsonl")
    out = roll(["p"] * 2, _trainer(policy))
    (row,) = roll.read_log()
    assert row["kept"] == 1 and not row["skipped"] and not roll.skip_step and row["fill_rate"] == 1.0
    assert row["draws"] in (1, 2) and row["variance_share"] == pytest.approx(1 / row["draws"])
    assert sorted(out["env_reward"]) == [0.0, 1.0] and len(out["completion_ids"]) == 2
    assert row["gen_flops"] == pytest.approx(2 * 1000.0 * row["gen_tokens"])
    assert row["train_flops"] == pytest.approx(6 * 1000.0 * row["train_tokens"])
    assert row["train_tokens"] == sum(len(p) + len(c) for p, c in zip(out["prompt_ids"], out["completion_ids"]))
    # every group flat: the cap is reached, the step is skipped, the discarded groups were still paid for
    policy.plan = lambda s, k: FAIL
    out = roll(["p"] * 2, _trainer(policy, step=1))
    row = roll.read_log()[-1]
    assert (row["draws"], row["kept"], row["skipped"], row["fill_rate"]) == (3, 0, True, 0.0) and roll.skip_step
    assert row["episodes"] == 6 and row["gen_tokens"] > 0 and len(out["env_reward"]) == 2
    # without ABF a step takes the groups as drawn
    plain = MultiTurnRollout(single, tok, num_generations=2, max_completion_length=128, max_context=8192, abf=False)
    plain(["p"] * 4, _trainer(policy))
    assert plain.skip_step is False
    assert json.loads((tmp_path / "steps.jsonl").read_text().splitlines()[0])["step"] == 1


def test_prompts_beyond_the_context_are_left_out_and_counted(envs, tok):
    lengths = sorted(len(MultiTurnRollout(envs, tok, num_generations=2, max_completion_length=64,
                                          max_context=10**6).prompt_ids[s.env_id]) for s in envs)
    roll = MultiTurnRollout(envs, tok, num_generations=2, max_completion_length=64, max_context=lengths[3] + 16)
    assert roll.over_context == sum(n >= lengths[3] for n in lengths) >= 3


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


class _Counting(ScriptedPolicy):
    """The scripted policy, counting generation calls and their batch sizes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def generate(self, input_ids, **kwargs):
        self.batches.append(len(input_ids))
        return super().generate(input_ids, **kwargs)


def test_a_round_of_draws_advances_together_and_observations_carry_no_loss(envs, tok):
    """Two groups of 2 (no ABF): 4 episodes in one batch per turn, as many calls as the longest episode's turns."""
    single = [s for s in envs if s.meta["phase"] == 0][:2]
    policy = _Counting(single, tok)
    roll = MultiTurnRollout(single, tok, num_generations=2, max_completion_length=256, max_context=8192, abf=False)
    out = roll(["p"] * 4, _trainer(policy))
    from synth.envs.api import Environment

    longest = max(len(Environment(s).golden_calls()) for s in single)
    assert roll.generate_calls == len(policy.batches) == longest + 1  # one call per turn, not one per episode
    assert policy.batches[0] == 4
    assert out["env_reward"] == [1.0] * 4  # the golden plan, run in the real environments, earns full F1
    for ids, mask in zip(out["completion_ids"], out["env_mask"], strict=True):
        assert len(ids) == len(mask) and 0 in mask and mask[0] == 1
        learned = tok.decode([t for t, m in zip(ids, mask, strict=True) if m])
        unseen = tok.decode([t for t, m in zip(ids, mask, strict=True) if not m])
        assert "<tool_call>" in learned and "<tool_response>" not in learned
        assert unseen.count("<tool_response>") >= 1 and unseen.endswith("<|im_start|>assistant\n")


def test_max_turns_caps_an_episode(envs, tok):
    multi = next(s for s in envs if s.meta["phase"] == 1)
    roll = MultiTurnRollout([multi], tok, num_generations=1, max_completion_length=384, max_context=8192, max_turns=1)
    episode = roll.episode(ScriptedPolicy([multi], tok), multi)
    assert tok.decode(episode.completion_ids).count("<tool_call>") == 1 and 0 < episode.f1 < 1.0
