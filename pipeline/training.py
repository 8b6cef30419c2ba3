"""The train stage of a pipeline job: ``[train].stages`` run in order, each resumable and accounted.

``midtrain``
    causal-LM training on the run's corpus (:mod:`train.midtrain`), into ``workdir/midtrain``; SFT then
    starts from it. Steps split the run's planned tokens at equal total FLOPs (:mod:`train.stages`).
``sft``
    :func:`train.sft.train_sft` into ``workdir/model``.
``warmstart``
    whenever ``grpo`` is a stage (also in arms whose ``grpo_steps`` level is 0, so the SFT-only arm differs
    from the GRPO arm by GRPO alone): :func:`train.grpo.warm_start`, SFT from the SFT model on the golden
    episodes of ``[train].warmstart_n_envs`` environments disjoint from the RL ones, into ``workdir/warmstart``.
``grpo``
    :func:`train.grpo.train_grpo` from the warm-started model on the RL environments (F1 reward; a curriculum
    of single-hop, multi-hop, then parallel-with-distractors phases; Adaptive Batch Filling), into
    ``workdir/grpo``; environments come from ``[train].grpo_envs`` or are built per run. Its steps are the
    ``grpo_steps`` axis' level when the design has one (0: the SFT-only arm), else ``[train].grpo_steps``.

Every stage's accounting is kept (``StagesResult.stages``); the run's N is the SFT model's, and its D,
FLOPs and wall time are the sums over stages, so all stages count in the run's FLOPs and in cost (GRPO's
FLOPs include generation and every rollout, kept or discarded). The warm start is recorded as a stage of its
own (``warmstart``) but is no stage of the law: ``fit --stages`` sees an arm as ``sft`` or ``sft,grpo``.
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


def _env_key(cfg: ExperimentConfig, run: RunSpec) -> str:
    from pipeline.reuse import file_digest, stage_key

    t = cfg.train
    return stage_key("envs-", {"seed": run.seed, "n": t.grpo_n_envs, "curriculum": t.grpo_curriculum,
                               "warm": t.warmstart_n_envs, "given": file_digest(t.grpo_envs) if t.grpo_envs else None})


def _grpo_envs(cfg: ExperimentConfig, run: RunSpec, workdir: Path, cache: Path | None) -> tuple[Path, Path | None]:
    """The RL environments (``[train].grpo_envs`` or built per run on the training domains, held-out servers
    unseen) and the warm-start ones (disjoint from them), as ``envs.jsonl`` files; built once per workdir, or
    reused from a run with the same settings and seed (:mod:`pipeline.reuse`)."""
    from synth.envs.io import dump_envs, load_envs
    from train.grpo import rl_envs, warm_envs

    from pipeline.reuse import publish, reuse

    t = cfg.train
    names = ([] if t.grpo_envs else ["envs.jsonl"]) + (["warm_envs.jsonl"] if t.warmstart_n_envs else [])
    key = _env_key(cfg, run)
    reuse(cache, key, names, workdir)
    path = Path(t.grpo_envs) if t.grpo_envs is not None else workdir / "envs.jsonl"
    if not path.is_file():
        dump_envs(rl_envs(t.grpo_n_envs, run.seed, curriculum=t.grpo_curriculum), path)
    warm = workdir / "warm_envs.jsonl" if t.warmstart_n_envs else None
    if warm is not None and not warm.is_file():
        dump_envs(warm_envs(t.warmstart_n_envs, run.seed, load_envs(path)), warm)
    publish(cache, key, names, workdir)
    return path, warm


def _pre_rl_key(cfg: ExperimentConfig, size: ModelSize, run: RunSpec, data_dir: Path, steps: int,
                sft_options: dict[str, Any]) -> str | None:
    """What the SFT model and the warm start depend on (None when they are not shared: mid-training, no warm
    start, no grpo stage)."""
    from pipeline.reuse import stage_key

    t = cfg.train
    if "grpo" not in t.stages or "midtrain" in t.stages or not t.warmstart_steps:
        return None
    tok = sft_options.get("tokenizer_dir")
    return stage_key("pre-rl-", {
        "data": Path(data_dir).name, "tokenizer": Path(tok).name if tok else None, "steps": steps, "seed": run.seed,
        "size": size.model_dump(mode="json", exclude={"gpus", "cpus", "mem_gb", "timeout_min"}),
        "options": {k: v for k, v in sft_options.items() if k in ("learning_rate", "max_epochs", "weight_decay",
                                                                   "schedule", "wsd_decay", "save_dtype")},
        "warm": [t.warmstart_n_envs, t.warmstart_steps] + ([t.warmstart_loss] if t.warmstart_loss != "assistant" else [])
        + ([f"drills={t.warmstart_copy_drills}"] if t.warmstart_copy_drills else []),
        "envs": _env_key(cfg, run)})


def _interrupt(sft_options: dict[str, Any]) -> dict[str, Any]:
    """The job's wall-clock checkpoints, stop requests and clean-up, for the warm start and GRPO."""
    return {k: sft_options[k] for k in ("checkpoint_every_s", "should_stop", "keep_checkpoints") if k in sft_options}


def _warm_stage(cfg: ExperimentConfig, size: ModelSize, run: RunSpec, workdir: Path, model_dir: Path,
                done: dict[str, TrainStats], sft_options: dict[str, Any], cache: Path | None,
                pre_key: str | None) -> tuple[Path, Path]:
    """The RL environments and the warm start (whenever ``grpo`` is a stage), published under ``pre_key``;
    returns the RL environments' file and the model GRPO starts from. The warm start takes its learning rate
    from ``sft_options``."""
    from synth.envs.io import load_envs
    from train.grpo import warm_start

    t = cfg.train
    envs, warm = _grpo_envs(cfg, run, workdir, cache)
    if warm is not None and t.warmstart_steps:
        done["warmstart"] = warm_start(load_envs(warm), model_dir, size, workdir / "warmstart",
                                       steps=t.warmstart_steps, seed=run.seed, threads=t.threads,
                                       learning_rate=sft_options.get("learning_rate"), label=run.run_id,
                                       loss_on=t.warmstart_loss, copy_drills=t.warmstart_copy_drills,
                                       **_interrupt(sft_options))
        model_dir = workdir / "warmstart"
        if pre_key is not None:
            from pipeline.reuse import publish

            publish(cache, pre_key, ["model", "warmstart"], workdir)
    return envs, model_dir


def _grpo_stage(cfg: ExperimentConfig, run: RunSpec, workdir: Path, model_dir: Path, envs: Path,
                done: dict[str, TrainStats], sft_options: dict[str, Any]) -> tuple[Path, int]:
    """GRPO from ``model_dir`` when the run's ``grpo_steps`` level is > 0; returns the final model folder and
    the GRPO steps."""
    from train.grpo import Sampling, train_grpo

    t = cfg.train
    grpo_steps = int(round(run.recipe.get("grpo_steps", t.grpo_steps)))
    if grpo_steps > 0:
        done["grpo"] = train_grpo(envs, model_dir, workdir / "grpo", max_steps=grpo_steps,
                                  num_generations=t.grpo_generations, prompts_per_step=t.grpo_prompts_per_step,
                                  max_completion_length=t.grpo_max_completion_length,
                                  learning_rate=t.grpo_learning_rate, seed=run.seed, threads=t.threads,
                                  sampling=Sampling(temperature=t.grpo_temperature, top_k=t.grpo_top_k,
                                                    top_p=t.grpo_top_p),
                                  abf=t.grpo_abf, draw_cap=t.grpo_draw_cap, reward=t.grpo_reward,
                                  beta=t.grpo_beta, negative_weight=t.grpo_negative_weight,
                                  vllm_mode=t.grpo_vllm,
                                  save_steps=max(1, grpo_steps // 4) if t.save_checkpoints else 0,
                                  report_to=t.report_to, run_name=run.run_id, **_interrupt(sft_options))
        model_dir = workdir / "grpo"
    return model_dir, grpo_steps


def train_stages(cfg: ExperimentConfig, size: ModelSize, run: RunSpec, data_dir: Path, workdir: Path, *,
                 steps: int, cache: Path | None = None, **sft_options: Any) -> StagesResult:
    """Run the configured stages for one run (see the module docstring); each resumes after a requeue.

    ``sft_options`` go to :func:`train.sft.train_sft` (the shared ``tokenizer_dir``, a scanned
    ``learning_rate``, ``max_epochs``, the run's ``label``, and the cluster options of
    :func:`pipeline.job.train_options`: layout, wall-clock checkpoints, clean-up, saved dtype). With ``cache``
    (the experiment's dataset cache), the environments, the SFT model and the warm start are shared between runs
    that differ only in a stage level (:mod:`pipeline.reuse`)."""
    from pipeline.reuse import producing, reuse

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
    pre_key = _pre_rl_key(cfg, size, run, data_dir, sft_steps, sft_options)
    with producing(cache, pre_key):  # arms running at once: one trains the shared stages, the others reuse them
        reused = pre_key is not None and reuse(cache, pre_key, ["model", "warmstart"], workdir)
        done["sft"] = train_sft(data_dir, size, model_dir, max_steps=sft_steps, seed=run.seed,
                                threads=cfg.train.threads, resume=True, init=init, **sft_options)
        if "grpo" in stages:
            envs, model_dir = _warm_stage(cfg, size, run, workdir, model_dir, done, sft_options, cache, pre_key)
    grpo_steps = 0
    if "grpo" in stages:
        model_dir, grpo_steps = _grpo_stage(cfg, run, workdir, model_dir, envs, done, sft_options)
    from train.distributed import release_devices

    release_devices()  # the GPUs go to evaluation next
    return StagesResult(total=_total(done), stages=done, model_dir=model_dir,
                        plan={**mid_plan, "sft_steps": sft_steps, "grpo_steps": grpo_steps,
                              "warmstart_steps": (done["warmstart"].steps or 0) if "warmstart" in done else 0,
                              "reused": float(reused)})
