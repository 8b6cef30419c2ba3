"""The train stage of a pipeline job: ``[train].stages`` run in order, each resumable and accounted.

``midtrain``
    causal-LM training on the run's corpus (:mod:`train.midtrain`), into ``workdir/midtrain``; SFT then
    starts from it. Steps split the run's planned tokens at equal total FLOPs (:mod:`train.stages`).
``sft``
    :func:`train.sft.train_sft` into ``workdir/model``.
``grpo``
    :func:`train.grpo.train_grpo` from the SFT model on the compiled RL environments (F1 reward, tiered
    distractors), into ``workdir/grpo``; environments come from ``[train].grpo_envs`` or are built per run.
    Its steps are the ``grpo_steps`` axis' level when the design has one (0: the SFT-only arm), else
    ``[train].grpo_steps``.

Every stage's accounting is kept (``StagesResult.stages``); the run's N is the SFT model's, and its D,
FLOPs and wall time are the sums over stages, so all stages count in the run's FLOPs and in cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grid.models import RunSpec, TrainStats
from toolscale.config import ExperimentConfig, ModelSize

__all__ = ["StagesResult", "stage_axes", "train_stages"]


@dataclass(frozen=True)
class StagesResult:
    """What the train stage produced."""

    total: TrainStats
    """The run's accounting over all stages."""
    stages: dict[str, TrainStats]
    """Accounting per stage that ran, in order."""
    model_dir: Path
    """The final model (what eval scores)."""
    plan: dict[str, float]
    """Planned steps per stage and the mid-training tokens."""


def stage_axes(cfg: ExperimentConfig) -> set[str]:
    """Names of the config's ``stage`` axes (not dataset knobs)."""
    return {a.name for a in cfg.axes if a.kind == "stage"}


def _total(stages: dict[str, TrainStats]) -> TrainStats:
    sft = stages["sft"]
    return TrainStats(params=sft.params, params_nonembedding=sft.params_nonembedding,
                      train_tokens=sum(s.train_tokens for s in stages.values()),
                      train_flops=sum(s.train_flops for s in stages.values()),
                      wall_s=sum(s.wall_s or 0.0 for s in stages.values()), final_loss=sft.final_loss,
                      steps=sum(s.steps or 0 for s in stages.values()),
                      stage_flops={k: s.train_flops for k, s in stages.items()})


def _grpo_envs(cfg: ExperimentConfig, run: RunSpec, workdir: Path) -> Path:
    if cfg.train.grpo_envs is not None:
        return Path(cfg.train.grpo_envs)
    from synth.envs.build import build_envs
    from synth.envs.io import dump_envs

    path = workdir / "envs.jsonl"
    if not path.is_file():  # training domains only: held-out servers stay unseen
        dump_envs(build_envs(cfg.train.grpo_n_envs, seed=run.seed), path)
    return path


def train_stages(cfg: ExperimentConfig, size: ModelSize, run: RunSpec, data_dir: Path, workdir: Path, *,
                 steps: int, **sft_options: Any) -> StagesResult:
    """Run the configured stages for one run (see the module docstring); each resumes after a requeue.

    ``sft_options`` go to :func:`train.sft.train_sft` (the shared ``tokenizer_dir``, a scanned
    ``learning_rate``, ``max_epochs``, the run's ``label``, and the cluster options of
    :func:`pipeline.job.train_options`: layout, wall-clock checkpoints, clean-up, saved dtype)."""
    from train.sft import train_sft
    from train.stages import plan_stages

    stages = cfg.train.stages
    done: dict[str, TrainStats] = {}
    init, sft_steps, mid_plan = None, steps, {"midtrain_steps": 0, "midtrain_tokens": 0.0}
    if "midtrain" in stages:
        from train.midtrain import prepare_midtrain, train_midtrain

        corpus = Path(cfg.train.midtrain_corpus) if cfg.train.midtrain_corpus else data_dir
        # the experiment's shared tokenizer when there is one (every arm, both stages), else one per run
        tok_dir = Path(sft_options.get("tokenizer_dir") or workdir / "tokenizer")
        sft_t, doc_t, corpus_t = prepare_midtrain(corpus, data_dir, size, tok_dir)
        level = run.recipe.get("midtrain_tokens", cfg.train.midtrain_tokens)
        plan = plan_stages(stages, total_steps=steps, batch_size=size.batch_size, sft_tokens=sft_t, doc_tokens=doc_t,
                           corpus_tokens=corpus_t, midtrain_tokens=None if level is None else float(level))
        sft_steps, mid_plan = plan.sft_steps, {"midtrain_steps": plan.midtrain_steps,
                                               "midtrain_tokens": plan.midtrain_tokens}
        if plan.midtrain_steps:
            done["midtrain"] = train_midtrain(corpus, size, workdir / "midtrain", max_steps=plan.midtrain_steps,
                                              seed=run.seed, threads=cfg.train.threads, tokenizer_dir=tok_dir)
            init = workdir / "midtrain"
        else:  # the SFT-only arm trains with the same tokenizer as the mid-trained arms
            sft_options = {**sft_options, "tokenizer_dir": tok_dir}
    model_dir = workdir / "model"
    if cfg.train.report_to != "none":
        sft_options = {"label": run.run_id, **sft_options, "report_to": cfg.train.report_to}
    done["sft"] = train_sft(data_dir, size, model_dir, max_steps=sft_steps, seed=run.seed, threads=cfg.train.threads,
                            resume=True, init=init, **sft_options)
    grpo_steps = int(round(run.recipe.get("grpo_steps", cfg.train.grpo_steps))) if "grpo" in stages else 0
    if grpo_steps > 0:
        from train.grpo import train_grpo

        envs = _grpo_envs(cfg, run, workdir)
        every = sft_options.get("checkpoint_every_s")
        done["grpo"] = train_grpo(envs, model_dir, workdir / "grpo", max_steps=grpo_steps,
                                  num_generations=cfg.train.grpo_generations, seed=run.seed,
                                  threads=cfg.train.threads, vllm_mode=cfg.train.grpo_vllm,
                                  save_steps=max(1, grpo_steps // 4) if cfg.train.save_checkpoints else 0,
                                  checkpoint_every_s=every, should_stop=sft_options.get("should_stop"),
                                  keep_checkpoints=sft_options.get("keep_checkpoints", True),
                                  report_to=cfg.train.report_to, run_name=run.run_id)
        model_dir = workdir / "grpo"
    from train.distributed import release_devices

    release_devices()  # the GPUs go to evaluation next
    return StagesResult(total=_total(done), stages=done, model_dir=model_dir,
                        plan={**mid_plan, "sft_steps": sft_steps, "grpo_steps": grpo_steps})
