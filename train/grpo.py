"""Reinforcement learning with TRL's ``GRPOTrainer`` on synth's executable environments (the RL objective).

The reward is the F1 environment reward of pinned interface 11 (``2 hit / (targets + calls)``,
:mod:`synth.envs.reward`) of one episode in a :class:`synth.envs.api.Environment`. Two rollout modes:

``multi-turn`` (default)
    :class:`train.rollout.MultiTurnRollout`, TRL's ``rollout_func``: episodes with observations, a policy-token
    budget that observations do not count against, a curriculum of environment phases, and ASTRA's Adaptive
    Batch Filling (groups whose rewards all agree are dropped and replaced; a step that cannot be filled within
    the draw cap is skipped). The reward is the episode's F1 (optionally plus partial credit, logged apart).
``single-turn``
    Plain GRPO generation; :func:`synth.envs.rl_reward.make_reward_fn` replays each completion's
    ``<tool_call>`` blocks in a fresh environment. The policy never sees an observation, and a policy
    SFT-trained on multi-turn data ends its turn after the first call, so this mode mostly rewards
    the first call; kept as the simpler baseline.

:func:`warm_start` is the SFT warm start on environment-format episodes (:func:`golden_rows`) that precedes
GRPO in the pipeline, on environments disjoint from the RL ones. Prompts are rendered with the model's chat
template (tools in the system turn, the SFT data's system prompt). The research plan fits SFT and RL laws
separately. Cost: every rollout counts, kept or discarded: ``2 N`` FLOPs per generated or re-read token, plus
``6 N`` per token of the optimized batch (:mod:`train.rollout`).
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
from toolscale.files import atomic_write_text
from train.accounting import accounting_callback, loss_curve, read_accounting
from train.checkpoint import STATS_FILE, checkpoint_dir, clear_checkpoints, last_checkpoint
from train.errors import TrainError
from train.interrupt import Interrupted, interrupt_callback
from train.rollout import REWARDS, MultiTurnRollout, Sampling, skip_callback

__all__ = ["train_grpo", "grpo_config", "grpo_prompts", "golden_rows", "load_env_samples", "MultiTurnRollout",
           "ROLLOUTS", "Sampling", "warm_start", "STEPS_FILE", "rl_envs", "warm_envs", "WARM_SEED_OFFSET"]

ROLLOUTS = ("multi-turn", "single-turn")
"""Rollout modes of :func:`train_grpo`."""
STEPS_FILE = "grpo_steps.jsonl"
"""One row per GRPO step (ABF draws, fill rate, rewards, FLOPs), written beside the model as it trains."""


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
    """Trajectory rows (pinned interface 1) of the golden episodes: the SFT warm start before GRPO.

    Each row: the SFT system prompt of the sample's domain and its query, then one assistant tool call and its
    real observation per golden call (dependency order), then the main answer (or ``Done.``). The golden calls
    run in one sandbox process; ``meta.env_reward`` is the F1 the episode earned (1.0 for a sound sample).
    """
    from synth import Environment
    from synth import sft_system_prompt

    def msg(role, content, tool_calls=None, tool_call_id=None, name=None):
        return {"role": role, "content": content, "tool_calls": tool_calls, "tool_call_id": tool_call_id,
                "name": name}

    rows = []
    for sample in samples:
        env = Environment(sample)
        messages = [msg("system", sft_system_prompt(sample)), msg("user", env.reset())]
        calls = env.golden_calls()
        for i, (call, obs) in enumerate(zip(calls, env.step_many(calls) if calls else [], strict=True), start=1):
            call_id = f"call_{i}"
            messages.append(msg("assistant", "", [{"id": call_id, "type": "function", "function": {
                "name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)}}]))
            messages.append(msg("tool", obs, tool_call_id=call_id, name=call["name"]))
        messages.append(msg("assistant", sample.main_answer or "Done."))
        rows.append({"messages": messages, "tools": json.dumps(sample.tools, ensure_ascii=False),
                     "meta": json.dumps({"task_id": sample.env_id, "env_reward": env.reward()})})
    return rows


def warm_start(samples: Sequence[Any], model_dir: str | Path, size: Any, out_dir: str | Path, *, steps: int,
               seed: int = 0, threads: int | None = None, learning_rate: float | None = None,
               label: str | None = None, loss_on: str = "assistant", copy_drills: int = 0,
               **interrupt: Any) -> TrainStats:
    """SFT on the golden episodes of ``samples`` (environments disjoint from the RL ones), from ``model_dir``.

    Rows whose golden episode does not earn F1 = 1 are left out. The data lands in ``out_dir/data/train.jsonl``
    and the model in ``out_dir`` (:func:`train.sft.train_sft`, resumable; a proxy rung starts from ``model_dir``
    with its tokenizer, a pretrained rung loads ``model_dir`` as its checkpoint). ``loss_on``: ``assistant``
    (the policy's turns) or ``all`` (every token of the episode: the prompt's ids and the observations that echo
    them carry the loss too). ``copy_drills`` > 0 adds a loss on that many fresh copy drills at every step
    (:class:`train.drills.CopyDrills`: an id list, a slice of an episode, the list again), and writes
    ``out_dir/copy_drills.json`` (the first list's and the repeat's loss: a repeat far below means the model
    copies). ``interrupt``: the ``checkpoint_every_s``, ``should_stop`` and ``keep_checkpoints`` of
    :func:`train.sft.train_sft`.
    """
    from train.sft import train_sft

    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise UsageError(f"warm-start steps must be a positive integer, got {steps!r}")
    rows = [r for r in golden_rows(samples) if json.loads(r["meta"])["env_reward"] >= 1.0 - 1e-9]
    if not rows:
        raise TrainError("warm start: no environment's golden episode earns reward 1")
    drills = _drills(rows, model_dir, copy_drills, seed) if copy_drills else None
    data = Path(out_dir) / "data"
    data.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if not (data / "train.jsonl").is_file() or (data / "train.jsonl").read_text(encoding="utf-8") != text:
        (data / "train.jsonl").write_text(text, encoding="utf-8")
    if size.pretrained:
        size, init = size.model_copy(update={"pretrained": str(model_dir)}), None
    else:
        init = model_dir
    stats = train_sft(data, size, out_dir, max_steps=steps, seed=seed, threads=threads, resume=True, save_steps=0,
                      learning_rate=learning_rate, label=label, init=init, loss_on=loss_on, aux_loss=drills, **interrupt)
    if drills is not None and drills.nll:
        (Path(out_dir) / "copy_drills.json").write_text(json.dumps(drills.summary(), indent=1), encoding="utf-8")
    return stats


def _drills(rows: list[dict[str, Any]], model_dir: str | Path, sequences: int, seed: int) -> Any:
    """The warm start's copy drills (:class:`train.drills.CopyDrills`), with ``model_dir``'s tokenizer."""
    from transformers import AutoTokenizer

    from train.drills import CopyDrills

    if isinstance(sequences, bool) or not isinstance(sequences, int) or sequences < 0:
        raise UsageError(f"warm-start copy drills must be a non-negative integer, got {sequences!r}")
    try:
        return CopyDrills(rows, AutoTokenizer.from_pretrained(str(model_dir)), sequences=sequences, seed=seed)
    except ValueError as err:
        raise TrainError(f"warm start: {err}") from None


WARM_SEED_OFFSET = 7919
"""Warm-start environments are drawn from databases of seed ``run seed + WARM_SEED_OFFSET`` (other facts than
the RL environments'), with other draws (``env_id`` prefix ``warm-``), and never repeat an RL prompt."""


def rl_envs(n: int, seed: int, *, curriculum: bool = True, validate: bool = True) -> list[Any]:
    """The RL environments of a run: ``n`` over the curriculum's phases (or one mixed phase), training domains."""
    from synth import CURRICULUM, FLAT, build_curriculum

    return build_curriculum(n, seed, phases=CURRICULUM if curriculum else FLAT, validate=validate)


def warm_envs(n: int, seed: int, rl: Sequence[Any]) -> list[Any]:
    """``n`` warm-start environments over the curriculum's phases, disjoint from ``rl`` (see
    :data:`WARM_SEED_OFFSET`); not replayed here: :func:`warm_start` keeps the golden episodes that earn 1."""
    from synth import build_curriculum

    return build_curriculum(n, seed + WARM_SEED_OFFSET, validate=False, id_prefix="warm-",
                            exclude_prompts={s.prompt for s in rl})


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


def env_reward(prompts=None, completions=None, env_reward=None, **kwargs) -> list[float]:
    """TRL reward function of multi-turn rollouts: the reward each episode earned in its environment."""
    if env_reward is None:
        raise TrainError("env_reward: the rollout returned no 'env_reward' field")
    return [float(r) for r in env_reward]


def grpo_config(output_dir: str | Path, *, max_steps: int, learning_rate: float, num_generations: int,
                prompts_per_step: int, max_completion_length: int, seed: int = 0, save_steps: int = 0,
                sampling: Sampling | None = None, beta: float = 0.0, **overrides: Any):
    """The ``GRPOConfig`` of one run, with CPU-appropriate settings (float32, no gradient checkpointing). ``beta``
    weighs the per-token KL to the starting model (0: no reference model is loaded)."""
    import torch
    from trl import GRPOConfig

    s = sampling or Sampling()
    gpu = torch.cuda.is_available()
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir), use_cpu=not gpu, bf16=gpu and torch.cuda.is_bf16_supported(), fp16=False,
        activation_checkpointing=False, learning_rate=learning_rate, lr_scheduler_type="constant",
        weight_decay=0.0, max_grad_norm=1.0, max_steps=max_steps,
        per_device_train_batch_size=num_generations * prompts_per_step, num_generations=num_generations,
        max_completion_length=max_completion_length, temperature=s.temperature, top_k=s.top_k, top_p=s.top_p,
        beta=beta, seed=seed, data_seed=seed,
        logging_steps=1, save_strategy="steps" if save_steps else "no", save_steps=save_steps or 500,
        save_total_limit=1, report_to="none", disable_tqdm=True, dataloader_num_workers=0,
        log_completions=False)
    kwargs.update(overrides)
    return GRPOConfig(**kwargs)


def train_grpo(envs: str | Path | Sequence[Any], model_dir: str | Path, out_dir: str | Path, *,
               max_steps: int = 20, num_generations: int = 8, prompts_per_step: int = 2,
               max_completion_length: int = 384, learning_rate: float = 1e-4, seed: int = 0,
               threads: int | None = None, resume: bool = True, save_steps: int = 0,
               rollout: str = "multi-turn", on_step: Callable[[int, int, float | None], None] | None = None,
               sampling: Sampling | None = None, abf: bool = True, draw_cap: int = 8, reward: str = "f1",
               partial_weight: float = 0.5, beta: float = 0.0, negative_weight: float = 1.0,
               vllm_mode: str | None = None, checkpoint_every_s: float | None = None,
               should_stop: Callable[[], str | None] | None = None, keep_checkpoints: bool = True,
               report_to: str = "none", run_name: str | None = None) -> TrainStats:
    """GRPO on executable environments, starting from a trained model folder (usually an SFT run).

    Parameters
    ----------
    envs
        ``envs.jsonl`` written by ``toolscale envs build``, or a list of ``synth.envs.models.EnvSample``
        (a curriculum's samples carry ``meta.phase``: :mod:`synth.envs.curriculum`).
    model_dir
        ``from_pretrained`` folder with model and tokenizer (e.g. :func:`warm_start` output).
    out_dir
        Run folder: final model + tokenizer, ``train_stats.json``, :data:`STEPS_FILE`, ``checkpoints/``.
    max_steps, num_generations, prompts_per_step, learning_rate
        Optimizer steps; completions per environment (the GRPO group, >= 2); groups per step; learning rate.
    max_completion_length
        Policy tokens per episode (multi-turn: observations do not count; single-turn: the completion).
    seed, threads, resume, save_steps, on_step
        As in :func:`train.sft.train_sft`.
    rollout
        ``multi-turn`` (episodes with observations, default) or ``single-turn`` (replayed plans).
    sampling
        Temperature, top-k, top-p of the rollouts (default 1.0, off, off).
    abf, draw_cap
        Adaptive Batch Filling and the most groups drawn per step before the step is skipped (multi-turn).
    reward, partial_weight
        ``f1``, or ``f1+partial``: F1 plus ``partial_weight`` x partial credit (logged apart either way).
    beta
        Weight of the per-token KL to ``model_dir``'s policy, which TRL loads again as the reference (>= 0;
        0 loads none). An anchor against drift when the groups' gradients are mostly noise.
    negative_weight
        Factor on negative advantages, in [0, 1] (1: GRPO; 0: only the episodes better than their group's mean
        are reinforced, so no sampled token is pushed down).
    vllm_mode
        Generate with vLLM through TRL: ``"server"`` (a ``trl vllm-serve`` process on its own GPUs) or
        ``"colocate"`` (in the training processes); None generates with ``model.generate``. Needs ``vllm``
        importable in the training environment. With more than one training process, ABF is refused (its
        draws differ between ranks, and every vLLM call is collective).
    checkpoint_every_s, should_stop, keep_checkpoints
        Wall-clock checkpoints, stop requests (save and raise :class:`train.interrupt.Interrupted`) and
        clean-up after success, as in :func:`train.sft.train_sft`.

    Returns
    -------
    grid.models.TrainStats
        ``train_tokens`` the optimized batches' tokens; ``train_flops`` generation and optimization of every
        rollout; ``train_stats.json`` also holds the loss curve, the reward curve and the per-step ABF log.
    """
    import torch

    from synth import make_reward_fn
    from train.proxy import count_params, load_model
    from train.sft import quiet_progress
    from train.tokenizer import load_tokenizer

    _check_args(max_steps=max_steps, num_generations=num_generations, prompts_per_step=prompts_per_step,
                max_completion_length=max_completion_length, rollout=rollout, draw_cap=draw_cap, reward=reward)
    _check_weights(beta, negative_weight)
    _check_vllm(vllm_mode, abf and rollout == "multi-turn")
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

    rows = _enough_rows(grpo_prompts(samples, tokenizer), prompts_per_step, rollout)
    config = grpo_config(checkpoint_dir(out), max_steps=max_steps, learning_rate=learning_rate,
                         num_generations=num_generations, prompts_per_step=prompts_per_step,
                         max_completion_length=max_completion_length, seed=seed, save_steps=save_steps, beta=beta,
                         sampling=sampling, **({"use_vllm": True, "vllm_mode": vllm_mode} if vllm_mode else {}),
                         **({} if report_to == "none" else {"report_to": report_to,
                                                           **({"run_name": run_name} if run_name else {})}))
    checkpoint = last_checkpoint(out) if resume else None
    accounting = accounting_callback(read_accounting(checkpoint).get("wall_s", 0.0), on_step=on_step)
    stopper = interrupt_callback(checkpoint_every_s, should_stop)
    roll = None
    with quiet_progress():
        if rollout == "multi-turn":
            roll = MultiTurnRollout(samples, tokenizer, num_generations=num_generations,
                                    max_completion_length=max_completion_length,
                                    max_context=int(model.config.max_position_embeddings),
                                    sampling=sampling or Sampling(), abf=abf, draw_cap=draw_cap, reward=reward,
                                    partial_weight=partial_weight, max_steps=max_steps, seed=seed,
                                    params=float(params), log_path=out / STEPS_FILE,
                                    resume_step=_checkpoint_step(checkpoint))
            trainer = _trainer(model, tokenizer, Dataset.from_list(rows), config, env_reward,
                               [accounting, stopper, skip_callback(roll)], roll, negative_weight)
        else:
            trainer = _trainer(model, tokenizer, Dataset.from_list(rows), config, make_reward_fn(samples),
                               [accounting, stopper], negative_weight=negative_weight)
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        if stopper.stopped_at is not None and trainer.state.global_step < max_steps:
            raise Interrupted(f"GRPO in {out}: {stopper.reason}; checkpoint saved at step {trainer.state.global_step} "
                              f"of {max_steps}")
        out.mkdir(parents=True, exist_ok=True)
        trainer.model.save_pretrained(out)
        tokenizer.padding_side = "right"
        tokenizer.save_pretrained(out)
    stats, payload = _accounting(trainer.state, roll, params, params_nonemb, accounting.wall_s, beta)
    payload.update({"objective": "grpo", "rollout": rollout,
                    "generation": f"vllm-{vllm_mode}" if vllm_mode else "transformers", "n_envs": len(samples),
                    "over_context": roll.over_context if roll else 0, "num_generations": num_generations,
                    "prompts_per_step": prompts_per_step, "max_completion_length": max_completion_length,
                    "sampling": (sampling or Sampling()).__dict__, "abf": abf, "draw_cap": draw_cap, "reward": reward,
                    "beta": beta, "negative_weight": negative_weight, "start_model": str(model_dir), "seed": seed,
                    "resumed_from": checkpoint and checkpoint.name})
    atomic_write_text(out / STATS_FILE, json.dumps(payload, indent=1))
    if not keep_checkpoints:
        clear_checkpoints(out)
    return stats


def _accounting(state: Any, roll: MultiTurnRollout | None, params: float, params_nonemb: float,
                wall_s: float, beta: float = 0.0) -> tuple[TrainStats, dict[str, Any]]:
    """The run's :class:`TrainStats` and the curves of ``train_stats.json``: every rollout's FLOPs from the step
    log (multi-turn), or ``2 N`` + ``6 N`` per token TRL processed (single-turn); with ``beta`` > 0 also the
    reference model's forward pass, ``2 N`` per optimized token, and the KL curve."""
    curve = loss_curve(state.log_history)
    rewards = [{"step": int(e["step"]), "reward": float(e["reward"])} for e in state.log_history
               if "reward" in e and "step" in e]
    if not rewards:
        raise TrainError("GRPO logged no reward: the reward function was never called")
    if roll is not None:
        steps_log = roll.read_log()
        tokens = float(sum(r["train_tokens"] for r in steps_log))
        flops = {"generation": sum(r["gen_flops"] for r in steps_log),
                 "optimization": sum(r["train_flops"] for r in steps_log)}
    else:  # TRL generated: each sequence's prompt and completion were processed once (2 N per token)
        steps_log = []
        tokens = float(state.num_input_tokens_seen)
        flops = {"generation": 2.0 * params * tokens, "optimization": training_flops(params, tokens)}
    if beta > 0:
        flops["reference"] = 2.0 * params * tokens
    final = curve[-1]["loss"] if curve else None
    stats = TrainStats(params=float(params), params_nonembedding=float(params_nonemb), train_tokens=tokens,
                       train_flops=sum(flops.values()), wall_s=wall_s,
                       final_loss=final if final is not None and math.isfinite(final) else None,
                       steps=int(state.global_step))
    payload = {"train": stats.model_dump(mode="json"), "loss_curve": curve, "reward_curve": rewards,
               "steps": steps_log, "flops": flops, "skipped_steps": sum(1 for r in steps_log if r["skipped"])}
    if beta > 0:
        payload["kl_curve"] = [{"step": int(e["step"]), "kl": float(e["kl"])} for e in state.log_history
                               if "kl" in e and "step" in e]
    return stats, payload


def _check_args(*, rollout: str, reward: str, **positive: int) -> None:
    for name, value in positive.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{name} must be a positive integer, got {value!r}")
    if rollout not in ROLLOUTS:
        raise UsageError(f"rollout must be one of {', '.join(ROLLOUTS)}, got {rollout!r}")
    if reward not in REWARDS:
        raise UsageError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
    if positive["num_generations"] < 2:
        raise UsageError(f"num_generations must be >= 2 (GRPO compares completions within a group), "
                         f"got {positive['num_generations']}")
    if positive["draw_cap"] < positive["prompts_per_step"]:
        raise UsageError(f"draw_cap ({positive['draw_cap']}) must be >= prompts_per_step "
                         f"({positive['prompts_per_step']}): fewer draws can never fill a step")


def _check_weights(beta: float, negative_weight: float) -> None:
    """The KL weight (finite, >= 0) and the factor on negative advantages (in [0, 1]), refused in one line."""
    import math

    number = lambda x: not isinstance(x, bool) and isinstance(x, int | float) and math.isfinite(x)  # noqa: E731
    if not number(beta) or beta < 0:
        raise UsageError(f"beta (the KL weight) must be a finite number >= 0, got {beta!r}")
    if not number(negative_weight) or not 0 <= negative_weight <= 1:
        raise UsageError(f"negative_weight must be a number in [0, 1], got {negative_weight!r}")


def _enough_rows(rows: list[dict[str, Any]], prompts_per_step: int, rollout: str) -> list[dict[str, Any]]:
    """TRL's sampler needs ``prompts_per_step`` distinct rows per step, or it yields no batch at all. Multi-turn
    rollouts draw their environments themselves (the rows only count), so the rows are cycled up to that number;
    single-turn rows are the prompts, so too few of them is refused."""
    if not rows or len(rows) >= prompts_per_step:
        return rows
    if rollout == "multi-turn":
        return [rows[i % len(rows)] for i in range(prompts_per_step)]
    raise UsageError(f"prompts_per_step = {prompts_per_step} needs as many environments; got {len(rows)}")


def _check_vllm(vllm_mode: str | None, abf: bool) -> None:
    import os

    if vllm_mode is not None and vllm_mode not in ("server", "colocate"):
        raise UsageError(f"vllm_mode must be 'server' or 'colocate', got {vllm_mode!r}")
    if vllm_mode and abf and int(os.environ.get("WORLD_SIZE", "1") or 1) > 1:
        raise UsageError("Adaptive Batch Filling with vLLM generation on more than one process is not supported "
                         "(ranks would draw different numbers of groups); set grpo_abf = false")


def _checkpoint_step(checkpoint: Path | None) -> int:
    return int(checkpoint.name.rsplit("-", 1)[1]) if checkpoint is not None else 0


def _trainer(model, tokenizer, dataset, config, reward_fn, callbacks, rollout_func=None, negative_weight=1.0):
    import warnings

    from transformers import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    class Trainer(GRPOTrainer):
        def _compute_loss(self, model, inputs):
            if negative_weight != 1.0:
                a = inputs["advantages"]
                inputs = {**inputs, "advantages": a.where(a >= 0, a * negative_weight)}
            return super()._compute_loss(model, inputs)

    with warnings.catch_warnings():  # TRL marks rollout_func experimental; we pin TRL's version
        warnings.filterwarnings("ignore", message=".*rollout_func.*experimental.*")
        trainer = Trainer(model=model, reward_funcs=[reward_fn], args=config, train_dataset=dataset,
                          processing_class=tokenizer, callbacks=list(callbacks), rollout_func=rollout_func)
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer
