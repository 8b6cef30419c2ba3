"""Reinforcement learning with TRL's ``GRPOTrainer`` on synth's executable environments (the RL objective).

The reward is the F1 environment reward of pinned interface 11 (``2 hit / (targets + calls)``,
:mod:`synth.envs.reward`) of one episode in a :class:`synth.envs.api.Environment`. Two rollout modes:

``multi-turn`` (default)
    :class:`MultiTurnRollout`, TRL's ``rollout_func``: the policy generates an assistant turn; its
    ``<tool_call>`` blocks run in the environment; the observations are appended as ``tool`` turns
    exactly as the chat template renders them (pinned interface 3), and the policy continues, until
    it answers without a call, the episode ends or the completion budget is spent. Observation
    tokens carry no loss (``env_mask`` 0). The reward is the episode's F1.
``single-turn``
    Plain GRPO generation; :func:`synth.envs.rl_reward.make_reward_fn` replays each completion's
    ``<tool_call>`` blocks in a fresh environment. The policy never sees an observation, and a policy
    SFT-trained on multi-turn data ends its turn after the first call, so this mode mostly rewards
    the first call; kept as the simpler baseline.

Prompts are rendered with the model's chat template (tools in the system turn).
The research plan fits SFT and RL laws separately; accounting is the same as for SFT
(:mod:`train.accounting`), with D the prompt and completion tokens of the policy updates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from grid.models import TrainStats
from toolscale.config import training_flops
from toolscale.errors import UsageError
from train.accounting import accounting_callback, loss_curve, read_accounting
from train.checkpoint import STATS_FILE, checkpoint_dir, clear_checkpoints, last_checkpoint
from train.errors import TrainError
from train.interrupt import Interrupted, interrupt_callback
from train.rollout import BatchedRollout

__all__ = ["train_grpo", "grpo_config", "grpo_prompts", "golden_rows", "load_env_samples", "MultiTurnRollout",
           "ROLLOUTS"]

ROLLOUTS = ("multi-turn", "single-turn")
"""Rollout modes of :func:`train_grpo`."""


def load_env_samples(envs: str | Path | Sequence[Any]) -> list[Any]:
    """Environment samples from an ``envs.jsonl`` path (``synth.envs.io.load_envs``) or a list of them."""
    if isinstance(envs, str | Path):
        from synth import load_envs

        path = Path(envs)
        if not path.exists():
            raise UsageError(f"environment file {str(path)!r} does not exist (expected `toolscale envs build` "
                             "output)")
        samples = load_envs(path)
    else:
        samples = list(envs)
    if not samples:
        raise UsageError("GRPO needs at least one environment sample, got none")
    return samples


def golden_rows(samples: Sequence[Any]) -> list[dict[str, Any]]:
    """Trajectory rows (pinned interface 1) of the golden episodes: an SFT warm start before GRPO.

    Each row: the GRPO system prompt and the sample's query, then one assistant tool call and its
    real observation per golden call (dependency order), then the main answer (or ``Done.``).
    """
    from synth import Environment
    from synth import SYSTEM_PROMPT

    def msg(role, content, tool_calls=None, tool_call_id=None, name=None):
        return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id,
                "name": name}

    rows = []
    for sample in samples:
        env = Environment(sample)
        messages = [msg("system", SYSTEM_PROMPT), msg("user", env.reset())]
        for i, call in enumerate(env.golden_calls(), start=1):
            call_id = f"call_{i}"
            messages.append(msg("assistant", "", [{"id": call_id, "type": "function", "function": {
                "name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}}]))
            messages.append(msg("tool", env.step(call), tool_call_id=call_id, name=call["name"]))
        messages.append(msg("assistant", sample.main_answer or "Done."))
        rows.append({"messages": messages, "tools": json.dumps(sample.tools, ensure_ascii=False),
                     "meta": json.dumps({"task_id": sample.env_id, "env_reward": env.reward()})})
    return rows


def grpo_prompts(samples: Sequence[Any], tokenizer) -> list[dict[str, Any]]:
    """GRPO dataset rows: a text ``prompt`` (system prompt + tools + user query, ready for the assistant)
    and the ``env_id`` column the reward function reads."""
    from synth import grpo_rows

    from train.chat import normalize_messages

    rows = []
    for row in grpo_rows(samples):
        text = tokenizer.apply_chat_template(normalize_messages(row["prompt"]), tools=json.loads(row["tools"]),
                                             tokenize=False, add_generation_prompt=True)
        rows.append({"prompt": text, "env_id": row["env_id"]})
    return rows


class MultiTurnRollout:
    """TRL ``rollout_func``: multi-turn episodes of the policy in the environments.

    Parameters
    ----------
    samples
        Environment samples; each prompt of :func:`grpo_prompts` maps back to its sample.
    prompts
        The rows of :func:`grpo_prompts` (``prompt`` text, ``env_id``).
    tokenizer
        The policy's tokenizer (its chat template's turn markers are used for observations).
    max_completion_length
        Token budget of the whole episode after the prompt (policy and observation tokens).
    temperature
        Sampling temperature.

    Returns (when called as ``rollout(prompts, trainer)``) the dict TRL expects: ``prompt_ids``,
    ``completion_ids``, ``logprobs`` (None: recomputed by the trainer), ``env_mask`` (1 for
    policy tokens), and ``env_reward`` (F1 per episode, read by :func:`env_reward`).
    """

    def __init__(self, samples, prompts, tokenizer, *, max_completion_length: int, temperature: float = 1.0):
        by_id = {s.env_id: s for s in samples}
        self.sample_of = {}
        for row in prompts:
            self.sample_of.setdefault(row["prompt"], by_id[row["env_id"]])
        self.tokenizer = tokenizer
        self.max_completion_length = max_completion_length
        self.temperature = temperature
        self.episodes = 0
        self.tool_calls = 0

    def _observation_ids(self, observations: list[str]) -> list[int]:
        text = "\n" + "".join(f"<|im_start|>tool\n<tool_response>{o}</tool_response><|im_end|>\n"
                               for o in observations) + "<|im_start|>assistant\n"
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def episode(self, model, prompt: str) -> tuple[list[int], list[int], list[int], float]:
        """One episode: ``(prompt_ids, completion_ids, env_mask, reward)``."""
        import torch

        from synth import Environment
        from synth import extract_tool_calls

        tok = self.tokenizer
        env = Environment(self.sample_of[prompt])
        env.reset()
        prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        completion: list[int] = []
        mask: list[int] = []
        while len(completion) < self.max_completion_length:
            context = torch.tensor([prompt_ids + completion])
            out = model.generate(context, attention_mask=torch.ones_like(context), do_sample=True,
                                 temperature=self.temperature, top_k=0, top_p=1.0,
                                 max_new_tokens=self.max_completion_length - len(completion),
                                 eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
            new = out[0, context.shape[1]:].tolist()
            while new and new[-1] == tok.pad_token_id:
                new.pop()
            completion += new
            mask += [1] * len(new)
            calls = extract_tool_calls(tok.decode(new, skip_special_tokens=False))
            if not new or new[-1] != tok.eos_token_id or not calls or env.done:
                break
            calls = calls[: env.max_turns - env.turns]
            self.tool_calls += len(calls)
            feedback = self._observation_ids(env.step_many(calls))
            if len(completion) + len(feedback) >= self.max_completion_length:
                break
            completion += feedback
            mask += [0] * len(feedback)
        self.episodes += 1
        return prompt_ids, completion, mask, env.reward()

    def __call__(self, prompts: list[str], trainer) -> dict[str, Any]:
        model = trainer.model
        was_training = model.training
        model.eval()
        try:
            episodes = [self.episode(model, p) for p in prompts]
        finally:
            model.train(was_training)
        return {"prompt_ids": [e[0] for e in episodes], "completion_ids": [e[1] for e in episodes],
                "logprobs": None, "env_mask": [e[2] for e in episodes], "env_reward": [e[3] for e in episodes]}


def env_reward(prompts=None, completions=None, env_reward=None, **kwargs) -> list[float]:
    """TRL reward function of multi-turn rollouts: the F1 each episode earned in its environment."""
    if env_reward is None:
        raise TrainError("env_reward: the rollout returned no 'env_reward' field")
    return [float(r) for r in env_reward]


def grpo_config(output_dir: str | Path, *, max_steps: int, learning_rate: float, num_generations: int,
                prompts_per_step: int, max_completion_length: int, seed: int = 0, save_steps: int = 0,
                **overrides: Any):
    """The ``GRPOConfig`` of one run, with CPU-appropriate settings (float32, no gradient checkpointing,
    no reference model: ``beta=0``)."""
    import torch
    from trl import GRPOConfig

    gpu = torch.cuda.is_available()
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir), use_cpu=not gpu, bf16=gpu and torch.cuda.is_bf16_supported(), fp16=False,
        activation_checkpointing=False, learning_rate=learning_rate, lr_scheduler_type="constant",
        weight_decay=0.0, max_grad_norm=1.0, max_steps=max_steps,
        per_device_train_batch_size=num_generations * prompts_per_step, num_generations=num_generations,
        max_completion_length=max_completion_length, temperature=1.0, beta=0.0, seed=seed, data_seed=seed,
        logging_steps=1, save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500,
        save_total_limit=1, report_to="none", disable_tqdm=True, dataloader_num_workers=0,
        log_completions=False)
    kwargs.update(overrides)
    return GRPOConfig(**kwargs)


def train_grpo(envs: str | Path | Sequence[Any], model_dir: str | Path, out_dir: str | Path, *,
               max_steps: int = 20, num_generations: int = 4, prompts_per_step: int = 1,
               max_completion_length: int = 96, learning_rate: float = 1e-4, seed: int = 0,
               threads: int | None = None, resume: bool = True, save_steps: int = 0,
               rollout: str = "multi-turn", on_step: Callable[[int, int, float | None], None] | None = None,
               vllm_mode: str | None = None, checkpoint_every_s: float | None = None,
               should_stop: Callable[[], str | None] | None = None, keep_checkpoints: bool = True,
               report_to: str = "none", run_name: str | None = None) -> TrainStats:
    """GRPO on executable environments, starting from a trained model folder (usually an SFT run).

    Parameters
    ----------
    envs
        ``envs.jsonl`` written by ``toolscale envs build``, or a list of ``synth.envs.models.EnvSample``.
    model_dir
        ``from_pretrained`` folder with model and tokenizer (e.g. :func:`train.sft.train_sft` output).
    out_dir
        Run folder: final model + tokenizer, ``train_stats.json``, ``checkpoints/``.
    max_steps, num_generations, prompts_per_step, max_completion_length, learning_rate
        Optimizer steps; completions per prompt (the GRPO group); prompts per step; most new tokens per
        completion; learning rate.
    seed, threads, resume, save_steps, on_step
        As in :func:`train.sft.train_sft`.
    rollout
        ``multi-turn`` (episodes with observations, batched turn by turn: :class:`train.rollout.BatchedRollout`;
        default) or ``single-turn`` (replayed plans).
    vllm_mode
        Generate with vLLM through TRL: ``"server"`` (a ``trl vllm-serve`` process on its own GPUs) or
        ``"colocate"`` (in the training processes); None generates with ``model.generate``. Needs ``vllm``
        importable in the training environment.
    checkpoint_every_s, should_stop, keep_checkpoints
        Wall-clock checkpoints, stop requests (save and raise :class:`train.interrupt.Interrupted`) and
        clean-up after success, as in :func:`train.sft.train_sft`.

    Returns
    -------
    grid.models.TrainStats
        ``final_loss`` is the last GRPO loss; ``train_stats.json`` also holds the reward curve.
    """
    import torch

    from synth import make_reward_fn
    from train.proxy import count_params, load_model
    from train.sft import quiet_progress
    from train.tokenizer import load_tokenizer

    for name, value in (("max_steps", max_steps), ("num_generations", num_generations),
                        ("prompts_per_step", prompts_per_step), ("max_completion_length", max_completion_length)):
        if not isinstance(value, int) or value < 1:
            raise UsageError(f"{name} must be a positive integer, got {value!r}")
    if rollout not in ROLLOUTS:
        raise UsageError(f"rollout must be one of {', '.join(ROLLOUTS)}, got {rollout!r}")
    if num_generations < 2:
        raise UsageError(f"num_generations must be >= 2 (GRPO compares completions within a group), "
                         f"got {num_generations}")
    if threads is not None:
        torch.set_num_threads(threads)
    samples = load_env_samples(envs)
    out = Path(out_dir)
    if not resume:
        clear_checkpoints(out)
    tokenizer = load_tokenizer(model_dir)
    tokenizer.padding_side = "left"
    with quiet_progress():
        model = load_model(model_dir)
    params, params_nonemb = count_params(model)

    from datasets import Dataset

    rows = grpo_prompts(samples, tokenizer)
    dataset = Dataset.from_list(rows)
    vllm = {"use_vllm": True, "vllm_mode": vllm_mode} if vllm_mode else {}
    config = grpo_config(checkpoint_dir(out), max_steps=max_steps, learning_rate=learning_rate,
                         num_generations=num_generations, prompts_per_step=prompts_per_step,
                         max_completion_length=max_completion_length, seed=seed, save_steps=save_steps, **vllm,
                         **({} if report_to == "none" else {"report_to": report_to,
                                                           **({"run_name": run_name} if run_name else {})}))
    checkpoint = last_checkpoint(out) if resume else None
    accounting = accounting_callback(read_accounting(checkpoint).get("wall_s", 0.0), on_step=on_step)
    stopper = interrupt_callback(checkpoint_every_s, should_stop)
    with quiet_progress():
        if rollout == "multi-turn":
            rollout_func = BatchedRollout(samples, rows, tokenizer, max_completion_length=max_completion_length)
            trainer = _trainer(model, tokenizer, dataset, config, env_reward, [accounting, stopper], rollout_func)
        else:
            trainer = _trainer(model, tokenizer, dataset, config, make_reward_fn(samples), [accounting, stopper])
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if stopper.stopped_at is not None and trainer.state.global_step < max_steps:
            raise Interrupted(f"GRPO in {out}: {stopper.reason}; checkpoint saved at step {trainer.state.global_step} "
                              f"of {max_steps}")
        out.mkdir(parents=True, exist_ok=True)
        trainer.model.save_pretrained(out)
        tokenizer.padding_side = "right"
        tokenizer.save_pretrained(out)
    state = trainer.state
    curve = loss_curve(state.log_history)
    rewards = [{"step": int(e["step"]), "reward": float(e["reward"])} for e in state.log_history
               if "reward" in e and "step" in e]
    if not rewards:
        raise TrainError("GRPO logged no reward: the reward function was never called")
    tokens = float(state.num_input_tokens_seen)
    final = curve[-1]["loss"] if curve else None
    stats = TrainStats(params=float(params), params_nonembedding=float(params_nonemb), train_tokens=tokens,
                       train_flops=training_flops(params, tokens), wall_s=accounting.wall_s,
                       final_loss=final if final is not None and math.isfinite(final) else None,
                       steps=int(state.global_step))
    payload = {"objective": "grpo", "rollout": rollout, "generation": f"vllm-{vllm_mode}" if vllm_mode else "transformers",
               "train": stats.model_dump(mode="json"), "loss_curve": curve,
               "reward_curve": rewards, "n_envs": len(samples), "num_generations": num_generations,
               "start_model": str(model_dir), "seed": seed, "resumed_from": checkpoint and checkpoint.name}
    tmp = out / (STATS_FILE + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    tmp.replace(out / STATS_FILE)
    if not keep_checkpoints:
        clear_checkpoints(out)
    return stats


def _trainer(model, tokenizer, dataset, config, reward_fn, callbacks, rollout_func=None):
    import warnings

    from transformers import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    with warnings.catch_warnings():  # TRL marks rollout_func experimental; we pin TRL's version
        warnings.filterwarnings("ignore", message=".*rollout_func.*experimental.*")
        trainer = GRPOTrainer(model=model, reward_funcs=[reward_fn], args=config, train_dataset=dataset,
                              processing_class=tokenizer, callbacks=list(callbacks), rollout_func=rollout_func)
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer
