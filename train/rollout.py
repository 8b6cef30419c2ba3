"""Batched multi-turn GRPO rollouts: every episode of a step advances one turn at a time, together.

:class:`BatchedRollout` is a TRL ``rollout_func`` (see :mod:`train.grpo`). Per turn, the contexts of all
episodes still running go to the policy in **one** generation call, each gets its ``<tool_call>`` blocks run
in its environment, and the observations are appended as tool turns **rendered by the policy's own chat
template** (:func:`observation_suffix`): ``<|im_start|>tool ...`` under this package's template,
``<|im_start|>user\\n<tool_response>\\n...\\n</tool_response>`` under Qwen3's. Observation tokens carry no loss.

Generation: ``model.generate`` on the trainer's device (left-padded batch, sampling at ``temperature``), or,
when the GRPO config has ``use_vllm`` (TRL's ``vllm_mode="server"`` with ``trl vllm-serve``, or
``"colocate"``), TRL's vLLM generator, whose weights TRL syncs before each rollout. Under vLLM every turn is a
collective call, so every rank runs the same number of turns (``max_turns``), idle ones with no prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["BatchedRollout", "observation_suffix"]


def observation_suffix(tokenizer: Any, observations: Sequence[str]) -> str:
    """The text that follows an assistant turn's end-of-turn token when tool results come back, up to and
    including the next assistant generation prompt, as the tokenizer's chat template renders it.

    Raises ``ValueError`` when the template does not render a conversation as a prefix of its continuation
    (it could not be trained multi-turn either).
    """
    from train.chat import normalize_messages

    call = {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    base = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    tools = [{"role": "tool", "content": o, "tool_call_id": f"call_{i}", "name": "f"} for i, o in enumerate(observations)]
    before = tokenizer.apply_chat_template(normalize_messages(base), tokenize=False)
    after = tokenizer.apply_chat_template(normalize_messages(base + tools), tokenize=False, add_generation_prompt=True)
    eos = tokenizer.eos_token
    cut = before.rfind(eos)
    if cut < 0 or not after.startswith(before[:cut + len(eos)]):
        raise ValueError("the chat template does not render a tool turn as a continuation of the assistant turn")
    return after[cut + len(eos):]


class BatchedRollout:
    """TRL ``rollout_func``: batched multi-turn episodes of the policy in the environments.

    Parameters
    ----------
    samples, prompts : environment samples and the rows of :func:`train.grpo.grpo_prompts`.
    tokenizer : the policy's tokenizer (left padding is set for generation).
    max_completion_length : token budget of a whole episode after its prompt (policy and observation tokens).
    temperature : sampling temperature.
    max_turns : most policy turns per episode.
    """

    def __init__(self, samples: Sequence[Any], prompts: Sequence[dict[str, Any]], tokenizer: Any, *,
                 max_completion_length: int, temperature: float = 1.0, max_turns: int = 8) -> None:
        by_id = {s.env_id: s for s in samples}
        self.sample_of: dict[str, Any] = {}
        for row in prompts:
            self.sample_of.setdefault(row["prompt"], by_id[row["env_id"]])
        self.tokenizer = tokenizer
        self.max_completion_length = max_completion_length
        self.temperature = temperature
        self.max_turns = max_turns
        self.episodes = 0
        self.tool_calls = 0
        self.generate_calls = 0

    def observation_ids(self, observations: Sequence[str]) -> list[int]:
        """Token ids of the tool turns carrying ``observations`` and the next generation prompt."""
        return self.tokenizer(observation_suffix(self.tokenizer, observations), add_special_tokens=False)["input_ids"]

    def _generate(self, trainer: Any, contexts: list[list[int]], budgets: list[int]) -> list[list[int]]:
        """New tokens per context (each cut at its budget and its end-of-turn), in one generation call."""
        self.generate_calls += 1
        vllm = getattr(trainer, "vllm_generation", None) if getattr(trainer.args, "use_vllm", False) else None
        if vllm is not None:
            _, outs, _, _ = vllm.generate(contexts, None, 1)
        elif not contexts:
            return []
        else:
            outs = self._hf_generate(trainer.model, contexts, max(budgets))
        eos, pad = self.tokenizer.eos_token_id, self.tokenizer.pad_token_id
        cut = []
        for new, budget in zip(outs, budgets, strict=False):
            new = list(new)[:budget]
            if eos in new:
                new = new[:new.index(eos) + 1]
            while new and new[-1] == pad and pad != eos:
                new.pop()
            cut.append(new)
        return cut

    def _hf_generate(self, model: Any, contexts: list[list[int]], max_new: int) -> list[list[int]]:
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(c) for c in contexts)
        ids = torch.full((len(contexts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(contexts), width), dtype=torch.long)
        for row, c in enumerate(contexts):  # left padding: every row continues at the right edge
            ids[row, width - len(c):] = torch.tensor(c, dtype=torch.long)
            mask[row, width - len(c):] = 1
        device = next(model.parameters()).device
        with torch.no_grad():
            out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), do_sample=True,
                                 temperature=self.temperature, top_k=0, top_p=1.0, max_new_tokens=max_new,
                                 eos_token_id=self.tokenizer.eos_token_id, pad_token_id=pad)
        return [row.tolist() for row in out[:, width:].cpu()]

    def run(self, trainer: Any, prompts: Sequence[str]) -> list[tuple[list[int], list[int], list[int], float]]:
        """Episodes of ``prompts``: ``(prompt_ids, completion_ids, env_mask, reward)`` each."""
        from synth import Environment
        from synth import extract_tool_calls

        tok = self.tokenizer
        envs = [Environment(self.sample_of[p]) for p in prompts]
        for env in envs:
            env.reset()
        prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        completion: list[list[int]] = [[] for _ in prompts]
        mask: list[list[int]] = [[] for _ in prompts]
        live = list(range(len(prompts)))
        lockstep = bool(getattr(trainer.args, "use_vllm", False))
        for _ in range(self.max_turns):
            if not live and not lockstep:
                break
            budgets = [self.max_completion_length - len(completion[i]) for i in live]
            news = self._generate(trainer, [prompt_ids[i] + completion[i] for i in live], budgets)
            still = []
            for i, new in zip(live, news, strict=True):
                completion[i] += new
                mask[i] += [1] * len(new)
                calls = extract_tool_calls(tok.decode(new, skip_special_tokens=False))
                if not new or new[-1] != tok.eos_token_id or not calls or envs[i].done:
                    continue
                calls = calls[: envs[i].max_turns - envs[i].turns]
                self.tool_calls += len(calls)
                feedback = self.observation_ids(envs[i].step_many(calls))
                if len(completion[i]) + len(feedback) >= self.max_completion_length:
                    continue
                completion[i] += feedback
                mask[i] += [0] * len(feedback)
                still.append(i)
            live = still
        self.episodes += len(prompts)
        return [(prompt_ids[i], completion[i], mask[i], envs[i].reward()) for i in range(len(prompts))]

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        model = trainer.model
        was_training = model.training
        model.eval()
        padding = self.tokenizer.padding_side
        self.tokenizer.padding_side = "left"
        try:
            episodes = self.run(trainer, prompts)
        finally:
            model.train(was_training)
            self.tokenizer.padding_side = padding
        return {"prompt_ids": [e[0] for e in episodes], "completion_ids": [e[1] for e in episodes],
                "logprobs": None, "env_mask": [e[2] for e in episodes], "env_reward": [e[3] for e in episodes]}
