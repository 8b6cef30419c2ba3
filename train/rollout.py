"""Multi-turn GRPO rollouts in executable environments, with ASTRA's Adaptive Batch Filling (ABF).

An **episode** (:meth:`MultiTurnRollout.episode`): the policy generates an assistant turn; its ``<tool_call>``
blocks run in the environment (:class:`synth.envs.api.Environment`); the observations are appended as tool
turns **rendered by the policy's own chat template** (:func:`observation_suffix`: ``<|im_start|>tool ...``
under this package's template, ``<|im_start|>user\n<tool_response>...`` under Qwen3's), and the policy continues
until it answers without a call, the episode's call budget or ``max_turns`` is spent, or a token budget runs
out. All episodes of a round of draws advance together: one generation call per turn. The budgets:

* ``max_completion_length`` counts the **policy's** tokens only (``env_mask`` 1); observations do not count
  against it, so a perfect policy is never cut off by the records it is shown;
* ``max_context`` bounds prompt + policy + observation tokens (the model's trained positions).

A **group** is ``G`` episodes of one environment; GRPO's advantage is each reward minus its group's mean, so a
group whose rewards are all equal teaches nothing. **ABF** (:meth:`MultiTurnRollout.__call__`) keeps only groups
whose rewards differ and draws new environments until the batch holds ``P`` such groups, or until ``draw_cap``
groups were drawn; then the step is **skipped** (no weight moves: :func:`skip_callback`) and logged. Groups are
drawn one at a time, so no surplus arises and ASTRA's carry-over buffer is not needed. Environments come from
:class:`EnvSampler`: one curriculum phase at a time (:mod:`synth.envs.curriculum`), in order, over equal shares
of the steps. TRL's own prompts only set the batch shape.

**Generation**: ``model.generate`` on the trainer's device (left-padded batch), or, when the GRPO config has
``use_vllm`` (TRL's ``vllm_mode="server"`` or ``"colocate"``), TRL's vLLM generator, whose weights TRL syncs
before each rollout (its sampling settings are TRL's, from the same config). Under vLLM every turn is a
collective call, so every episode batch runs ``max_turns`` turns (idle ones with no prompts).

**Cost.** Every episode drawn, kept or discarded, is counted: generation costs ``2 N`` FLOPs per token processed
(each turn re-reads its context, then generates), and the optimized batch ``6 N`` per token, prompt and
observations included (TRL's forward and backward pass run over them).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from train.errors import TrainError

__all__ = ["Sampling", "Episode", "EnvSampler", "MultiTurnRollout", "skip_callback", "REWARDS", "golden_texts",
           "observation_suffix"]

REWARDS = ("f1", "f1+partial")
"""Training rewards: the F1 environment reward, or F1 plus ``partial_weight`` x partial credit."""


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


@dataclass(frozen=True)
class Sampling:
    """How the policy samples during rollouts."""

    temperature: float = 1.0
    top_k: int = 0
    """Keep the k most likely tokens (0: off)."""
    top_p: float = 1.0
    """Nucleus mass (1.0: off)."""


@dataclass
class Episode:
    """One finished episode."""

    env_id: str
    phase: int
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    """1 for policy tokens, 0 for observation tokens (no loss)."""
    f1: float
    """The environment's F1 reward."""
    partial: float
    """Partial credit in [0, 1] (:func:`synth.envs.reward.partial_credit`), logged apart from F1."""
    reward: float
    """What GRPO optimizes: ``f1``, or ``f1 + partial_weight * partial``."""
    gen_tokens: int
    """Tokens the generation forward passes processed (context re-read each turn + new tokens)."""


class EnvSampler:
    """Draws environments phase by phase: phase ``k`` of ``K`` during steps ``[k S/K, (k+1) S/K)`` of ``S``,
    shuffled without replacement within a phase (a new shuffle when it runs out); seeded."""

    def __init__(self, samples: Sequence[Any], max_steps: int, seed: int = 0) -> None:
        from synth import phases_of

        self.phases = phases_of(samples)
        if not self.phases:
            raise TrainError("no environment to sample from")
        self.max_steps = max(1, max_steps)
        self.rng = random.Random(f"toolscale-grpo-sampler:{seed}")
        self._queues: dict[int, list[Any]] = {}

    def phase_at(self, step: int) -> int:
        """Index (into the non-empty phases) of the phase at optimizer step ``step`` (0-based)."""
        return min(len(self.phases) - 1, step * len(self.phases) // self.max_steps)

    def draw(self, step: int) -> Any:
        """The next environment of the phase at ``step``."""
        k = self.phase_at(step)
        queue = self._queues.setdefault(k, [])
        if not queue:
            queue += self.rng.sample(self.phases[k], len(self.phases[k]))
        return queue.pop()


def skip_callback(rollout: "MultiTurnRollout"):
    """A ``TrainerCallback`` that makes a skipped ABF step a true no-op: it drops the gradients before the optimizer
    step, so Adam's moments move nothing either (with zero gradients, momentum alone would still move the weights)."""
    from transformers import TrainerCallback

    class SkipSkippedSteps(TrainerCallback):
        def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
            if rollout.skip_step and model is not None:
                for p in model.parameters():
                    p.grad = None

    return SkipSkippedSteps()


@dataclass
class MultiTurnRollout:
    """TRL ``rollout_func`` with multi-turn episodes and ABF (see the module docstring).

    ``rollout(prompts, trainer)`` returns ``prompt_ids``, ``completion_ids``, ``logprobs`` (None: the trainer
    recomputes them), ``env_mask`` and ``env_reward`` (read by the reward function), for ``len(prompts) / G``
    groups of ``G`` episodes, and appends one row per optimizer step to ``log_path`` (:meth:`step_log`).
    """

    samples: Sequence[Any]
    tokenizer: Any
    num_generations: int
    max_completion_length: int
    max_context: int
    sampling: Sampling = field(default_factory=Sampling)
    abf: bool = True
    draw_cap: int = 8
    reward: str = "f1"
    partial_weight: float = 0.5
    max_steps: int = 1
    seed: int = 0
    params: float = 0.0
    """N, for the FLOPs of every rollout."""
    log_path: Path | None = None
    """JSONL file that gets one row per step as it happens (:meth:`read_log` reads it back)."""
    resume_step: int = 0
    """Steps already done (a resumed run keeps their rows of ``log_path`` and drops later ones)."""
    max_turns: int = 16
    """Most policy turns per episode (under vLLM, every batch runs this many: the calls are collective)."""

    def __post_init__(self) -> None:
        if self.reward not in REWARDS:
            raise TrainError(f"reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        self.prompt_ids = {s.env_id: self._prompt_ids(s) for s in self.samples}
        fits = [s for s in self.samples if len(self.prompt_ids[s.env_id]) < self.max_context - 16]
        self.over_context = len(self.samples) - len(fits)
        if not fits:
            raise TrainError(f"no environment's prompt fits the context of {self.max_context} tokens")
        self.sampler = EnvSampler(fits, self.max_steps, self.seed)
        self.caches: dict[str, dict[str, str]] = {}
        self.skip_step = False
        self.gen_flops = 0.0
        self.generate_calls = 0
        self._vllm: Any = None
        if self.log_path is not None:
            kept = [r for r in self.read_log() if r["step"] <= self.resume_step]
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")

    def _prompt_ids(self, sample: Any) -> list[int]:
        from synth import grpo_rows
        from train.chat import normalize_messages

        row = grpo_rows([sample])[0]
        text = self.tokenizer.apply_chat_template(normalize_messages(row["prompt"]), tools=json.loads(row["tools"]),
                                                  tokenize=False, add_generation_prompt=True)
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _observation_ids(self, observations: list[str]) -> list[int]:
        """Token ids of the tool turns carrying ``observations`` and the next generation prompt."""
        return self.tokenizer(observation_suffix(self.tokenizer, observations), add_special_tokens=False)["input_ids"]

    def _generate(self, model, contexts: list[list[int]], budgets: list[int]) -> list[list[int]]:
        """One sampled turn per context, in one generation call; each cut at its budget and first EOS."""
        self.generate_calls += 1
        if self._vllm is not None:
            _, outs, _, _ = self._vllm.generate(contexts, None, 1)
        elif not contexts:
            return []
        else:
            outs = self._hf_generate(model, contexts, max(budgets))
        tok, news = self.tokenizer, []
        for new, budget in zip(outs, budgets, strict=False):
            new = list(new)[:budget]
            if tok.eos_token_id in new:
                new = new[:new.index(tok.eos_token_id) + 1]
            while new and new[-1] == tok.pad_token_id and tok.pad_token_id != tok.eos_token_id:
                new.pop()
            news.append(new)
        return news

    def _hf_generate(self, model, contexts: list[list[int]], max_new: int) -> list[list[int]]:
        """``model.generate`` over a left-padded batch: the new tokens of each row (padded to ``max_new``)."""
        import torch

        tok, s = self.tokenizer, self.sampling
        width = max(len(c) for c in contexts)
        ids = torch.full((len(contexts), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(contexts), width), dtype=torch.long)
        for row, c in enumerate(contexts):
            ids[row, width - len(c):] = torch.tensor(c, dtype=torch.long)
            mask[row, width - len(c):] = 1
        params = getattr(model, "parameters", None)
        device = next(params()).device if params is not None else "cpu"
        with torch.no_grad():
            out = model.generate(ids.to(device), attention_mask=mask.to(device), do_sample=True,
                                 temperature=s.temperature, top_k=s.top_k, top_p=s.top_p, max_new_tokens=max_new,
                                 eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        return [row.tolist() for row in out[:, width:].cpu()]

    def episode(self, model, sample: Any) -> Episode:
        """One episode of ``sample`` under the budgets of the module docstring."""
        return self.play(model, [sample], 1)[0][0]

    def group(self, model, sample: Any) -> list[Episode]:
        """``G`` episodes of one environment, generated in lockstep (one batch per turn)."""
        return self.play(model, [sample], self.num_generations)[0]

    def play(self, model, samples: Sequence[Any], n: int) -> list[list[Episode]]:
        """``n`` independent episodes of each of ``samples``, all in one batched generation per turn; the
        episodes grouped by sample, in order."""
        from synth import Environment

        runs = [_Run(Environment(s, cache=self.caches.setdefault(s.env_id, {})), self.prompt_ids[s.env_id])
                for s in samples for _ in range(n)]
        for _ in range(self.max_turns):
            active = []
            for r in runs:
                r.room = min(self.max_completion_length - r.policy,
                             self.max_context - len(r.prompt) - len(r.completion))
                r.open = r.open and r.room > 0
                active += [r] if r.open else []
            if not active and self._vllm is None:
                break
            news = self._generate(model, [r.prompt + r.completion for r in active], [r.room for r in active])
            for r, new in zip(active, news, strict=True):
                self._advance(r, new)
        done = [self._finish(s, r) for s, r in zip([s for s in samples for _ in range(n)], runs, strict=True)]
        return [done[i * n:(i + 1) * n] for i in range(len(samples))]

    def _advance(self, run: "_Run", new: list[int]) -> None:
        """Append one generated turn; run its calls and append their observations, or close the episode."""
        from synth import extract_tool_calls

        tok, env, prompt = self.tokenizer, run.env, run.prompt
        run.processed += len(prompt) + len(run.completion) + len(new)
        run.completion += new
        run.mask += [1] * len(new)
        run.policy += len(new)
        calls = extract_tool_calls(tok.decode(new, skip_special_tokens=False))
        run.calls += calls
        if not new or new[-1] != tok.eos_token_id or not calls or env.done:
            run.open = False
            return
        feedback = self._observation_ids(env.step_many(calls[: env.max_turns - env.turns]))
        if len(prompt) + len(run.completion) + len(feedback) >= self.max_context:
            run.open = False
            return
        run.completion += feedback
        run.mask += [0] * len(feedback)

    def _finish(self, sample: Any, run: "_Run") -> Episode:
        from synth import partial_credit, phase_of

        f1 = run.env.reward()
        partial = partial_credit(run.calls, sample.tool_names(), sample.prompt, sample.targets)
        reward = f1 + self.partial_weight * partial if self.reward == "f1+partial" else f1
        self.gen_flops += 2.0 * self.params * run.processed
        return Episode(sample.env_id, phase_of(sample), run.prompt, run.completion, run.mask, f1, partial, reward,
                       run.processed)

    def __call__(self, prompts: list[Any], trainer) -> dict[str, Any]:
        model = trainer.model
        step = int(trainer.state.global_step)
        want = max(1, len(prompts) // self.num_generations)
        was_training = model.training
        model.eval()
        kept: list[list[Episode]] = []
        flat: list[list[Episode]] = []
        draws, self.gen_flops = 0, 0.0
        if getattr(getattr(trainer, "args", None), "use_vllm", False):
            self._vllm = trainer.vllm_generation
        try:  # rounds of draws, each round's groups in one batch: at most the missing count, so no surplus
            while len(kept) < want and draws < (self.draw_cap if self.abf else want):
                n = min(want - len(kept), (self.draw_cap if self.abf else want) - draws)
                for group in self.play(model, [self.sampler.draw(step) for _ in range(n)], self.num_generations):
                    (kept if not self.abf or _varies(group) else flat).append(group)
                draws += n
        finally:
            model.train(was_training)
            self._vllm = None
        self.skip_step = len(kept) < want
        batch = [e for g in kept + flat[: want - len(kept)] for e in g]
        tokens = sum(len(e.prompt_ids) + len(e.completion_ids) for e in batch)
        row = {**self.step_log(step + 1, draws, kept, flat, want), "train_tokens": tokens,
               "gen_flops": self.gen_flops, "train_flops": 6.0 * self.params * tokens}
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")
        return {"prompt_ids": [e.prompt_ids for e in batch], "completion_ids": [e.completion_ids for e in batch],
                "logprobs": None, "env_mask": [e.env_mask for e in batch], "env_reward": [e.reward for e in batch]}

    def read_log(self) -> list[dict[str, Any]]:
        """The step rows written so far (``[]`` without a ``log_path``)."""
        if self.log_path is None or not self.log_path.is_file():
            return []
        return [json.loads(line) for line in self.log_path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def step_log(self, step: int, draws: int, kept: list[list[Episode]], flat: list[list[Episode]],
                 want: int) -> dict[str, Any]:
        """One step's row: phase, groups drawn / kept / needed, fill rate (kept / needed), share of drawn groups
        whose rewards differ, skipped, mean F1 and partial credit over every episode drawn, and over the kept."""
        every = [e for g in kept + flat for e in g]
        used = [e for g in kept for e in g]
        return {"step": step, "phase": self.sampler.phase_at(step - 1), "draws": draws, "kept": len(kept),
                "needed": want, "fill_rate": len(kept) / want,
                "variance_share": sum(_varies(g) for g in kept + flat) / max(1, draws),
                "skipped": len(kept) < want, "episodes": len(every),
                "f1": _mean([e.f1 for e in every]), "partial": _mean([e.partial for e in every]),
                "reward": _mean([e.reward for e in every]), "f1_kept": _mean([e.f1 for e in used]),
                "gen_tokens": sum(e.gen_tokens for e in every)}


@dataclass
class _Run:
    """An episode in progress."""

    env: Any
    prompt: list[int]
    completion: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    policy: int = 0
    processed: int = 0
    room: int = 0
    open: bool = True

    def __post_init__(self) -> None:
        self.env.reset()


def golden_texts(sample: Any) -> tuple[str, str]:
    """``(policy, context)`` of the sample's golden episode: what the policy writes, and the whole rendered
    conversation (prompt, calls, observations, answer). Observations are replayed in the sandbox."""
    from synth import Environment, grpo_rows
    from train.chat import normalize_messages, render

    env = Environment(sample)
    env.reset()
    calls = env.golden_calls()
    observations = env.step_many(calls) if calls else []
    row = grpo_rows([sample])[0]
    turns = [f"<tool_call>{json.dumps({'name': c['name'], 'arguments': c['arguments']}, ensure_ascii=False)}"
             f"</tool_call><|im_end|>" for c in calls]
    answer = f"{sample.main_answer or 'Done.'}<|im_end|>"
    messages = list(row["prompt"])
    for i, (c, obs) in enumerate(zip(calls, observations, strict=True)):
        messages.append({"role": "assistant", "content": "", "tool_calls": [{"id": f"call_{i}", "type": "function",
                         "function": {"name": c["name"], "arguments": c["arguments"]}}]})
        messages.append({"role": "tool", "content": obs, "tool_call_id": f"call_{i}"})
    messages.append({"role": "assistant", "content": sample.main_answer or "Done."})
    context = render(normalize_messages(messages), json.loads(row["tools"]))
    return "".join(turns) + answer, context


def _varies(group: Sequence[Episode]) -> bool:
    return max(e.reward for e in group) - min(e.reward for e in group) > 1e-9


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
