"""Contracts of the train package: the ``[train]`` and ``[lr_scan]`` settings and the training stages.

Only pydantic and the standard library are imported here (no torch), so the config
(:mod:`toolscale.config`, which composes these sections) and every other package can read them.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = ["LRScanSpec", "STAGES", "STAGE_AXES", "TrainSpec"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


STAGES: tuple[str, ...] = ("midtrain", "sft", "grpo")
"""Training stages in the order they run (:mod:`train.stages`)."""

STAGE_AXES: dict[str, str] = {"midtrain_tokens": "midtrain", "grpo_steps": "grpo"}
"""Axes of kind ``stage`` the pipeline knows, with the stage each sizes (they set training, not the dataset;
level 0 skips the stage, so one experiment can hold runs with and without it)."""


class TrainSpec(_Frozen):
    """Training settings shared by every rung (train/): the stages each run goes through."""

    stages: list[Literal["midtrain", "sft", "grpo"]] = Field(default_factory=lambda: ["sft"])
    """Stages in order: ``midtrain`` (causal LM on synth's corpus, seed 001), ``sft``, ``grpo`` (RL on the
    compiled environments with the F1 reward, ASTRA's second stage). SFT is always there; SFT and RL laws
    are fitted separately (``fit --stages``)."""
    midtrain_corpus: str | None = None
    """A JSONL file of ``{"text"}`` documents to mid-train on; None uses each run's synthesised
    ``corpus.jsonl`` (needs ``[synth].narratives = true``)."""
    midtrain_tokens: float | None = Field(default=None, ge=0.0)
    """Corpus tokens to mid-train on when no ``midtrain_tokens`` axis sets it; None takes one pass over the
    corpus. Total tokens stay those of the run's planned steps: SFT gets what mid-training did not use."""
    grpo_envs: str | None = None
    """``envs.jsonl`` (``toolscale envs build``) for the grpo stage; None builds ``grpo_n_envs`` per run."""
    grpo_n_envs: int = Field(default=16, ge=0)
    """Environments built for the grpo stage when ``grpo_envs`` is not given (training domains, run seed)."""
    grpo_steps: int = Field(default=10, ge=1)
    """GRPO optimizer steps."""
    grpo_generations: int = Field(default=8, ge=2)
    """Completions per environment (the GRPO group, G >= 2)."""
    grpo_prompts_per_step: int = Field(default=2, ge=1)
    """Groups per GRPO step (P)."""
    grpo_max_completion_length: int = Field(default=384, ge=16)
    """Policy tokens per episode; observations do not count against it (only against the context)."""
    grpo_learning_rate: float = Field(default=1e-4, gt=0)
    """GRPO learning rate (constant)."""
    grpo_beta: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    """Weight of the per-token KL to the warm-started policy (0: none, and no reference model is loaded)."""
    grpo_negative_weight: float = Field(default=1.0, ge=0, le=1, allow_inf_nan=False)
    """Factor on negative advantages (1: GRPO; 0: only the episodes better than their group's mean are
    reinforced, so no sampled token is pushed down)."""
    grpo_temperature: float = Field(default=1.0, gt=0)
    """Sampling temperature of the rollouts."""
    grpo_top_k: int = Field(default=0, ge=0)
    """Sample among the k most likely tokens (0: off)."""
    grpo_top_p: float = Field(default=1.0, gt=0, le=1)
    """Nucleus sampling mass (1: off)."""
    grpo_abf: bool = True
    """ASTRA's Adaptive Batch Filling: keep only groups whose rewards differ, draw until the step is full."""
    grpo_draw_cap: int = Field(default=8, ge=1)
    """Most groups drawn per step under ABF; a step still not full is skipped (and logged)."""
    grpo_reward: Literal["f1", "f1+partial"] = "f1"
    """Training reward: the F1 environment reward, or F1 plus partial credit (logged apart; laws fit F1)."""
    grpo_curriculum: bool = True
    """Build the RL environments as a curriculum (single-hop, multi-hop, parallel with distractors) and draw
    them phase by phase; False: one mixed phase."""
    warmstart_n_envs: int = Field(default=96, ge=0)
    """Environments (disjoint from the RL ones) whose golden episodes the SFT warm start trains on before
    GRPO; runs whenever ``grpo`` is a stage, also in arms whose ``grpo_steps`` level is 0. 0: no warm start."""
    warmstart_steps: int = Field(default=100, ge=0)
    """Optimizer steps of the warm start (0: none)."""
    warmstart_loss: Literal["assistant", "all"] = "assistant"
    """Tokens of the golden episodes that carry the warm start's loss: the policy's turns, or every token
    (prompt and observations too: more of the id-copying that a tiny proxy lacks, docs/results/rl/)."""
    warmstart_copy_drills: int = Field(default=0, ge=0)
    """Copy drills per warm-start step (0: none): that many fresh sequences (an id list shaped like the episodes'
    copied values, 17-52 tokens of an episode, the list again) under their own loss, summed with the episodes'
    at every step (:class:`train.drills.CopyDrills`): the copy a tiny proxy does not learn from episodes alone.
    The warm start's ``copy_drills.json`` says whether the copy formed (the repeat's loss against the first
    list's); that is the drills' copy only, which carried over to episodes on 2 of 3 probe seeds. Experimental;
    16 is the probes' setting (docs/results/rl/)."""
    grpo_vllm: Literal["server", "colocate"] | None = None
    """GRPO generation on GPUs through TRL's vLLM integration: ``server`` (``trl vllm-serve`` on GPUs of its own)
    or ``colocate`` (inside the training processes); needs ``vllm`` importable in the training environment.
    None generates with ``model.generate``."""
    threads: int = Field(default=2, ge=1)
    """torch CPU threads per run."""
    save_checkpoints: bool = True
    """Write checkpoints so a preempted run resumes."""
    report_to: Literal["none", "wandb", "tensorboard"] = "none"
    """Where TRL logs training curves (its ``report_to``); runs are named by their toolscale run id. ``wandb``
    needs the ``wandb`` package and a login (``WANDB_MODE=offline`` works without a network)."""

    @model_validator(mode="before")
    @classmethod
    def _objective(cls, data: Any) -> Any:
        # ``objective`` (before stages existed): "grpo" meant SFT then GRPO
        if isinstance(data, dict) and "objective" in data:
            data = dict(data)
            obj = data.pop("objective")
            if obj not in ("sft", "grpo"):
                raise ValueError(f"objective must be 'sft' or 'grpo' (better: stages = [...]), got {obj!r}")
            data.setdefault("stages", ["sft", "grpo"] if obj == "grpo" else ["sft"])
        return data

    @model_validator(mode="after")
    def _stage_order(self) -> "TrainSpec":
        if "sft" not in self.stages:
            raise ValueError(f"stages must include 'sft', got {self.stages}")
        if len(set(self.stages)) != len(self.stages) or self.stages != [s for s in STAGES if s in self.stages]:
            raise ValueError(f"stages run in the order {', '.join(STAGES)}, each at most once; got {self.stages}")
        if "grpo" in self.stages and self.grpo_envs is None and self.grpo_n_envs == 0:
            raise ValueError("stage 'grpo' needs environments: set train.grpo_envs (an envs.jsonl) or "
                             "train.grpo_n_envs > 0")
        self._check_rl()
        return self

    def _check_rl(self) -> None:
        if "grpo" in self.stages and self.grpo_envs is None and self.grpo_curriculum and self.grpo_n_envs < 3:
            raise ValueError(f"train.grpo_n_envs = {self.grpo_n_envs}: the curriculum's 3 phases need 3 or more "
                             "environments (or set train.grpo_curriculum = false)")
        if self.grpo_abf and self.grpo_draw_cap < self.grpo_prompts_per_step:
            raise ValueError(f"train.grpo_draw_cap = {self.grpo_draw_cap} is below train.grpo_prompts_per_step = "
                             f"{self.grpo_prompts_per_step}: no step could ever be filled")
        if (self.warmstart_n_envs == 0) != (self.warmstart_steps == 0):
            raise ValueError(f"train.warmstart_n_envs = {self.warmstart_n_envs} and train.warmstart_steps = "
                             f"{self.warmstart_steps}: set both to 0 (no warm start) or both above 0")

    @property
    def abf_warning(self) -> str | None:
        """Why Adaptive Batch Filling may skip most GRPO steps, or None: a draw cap equal to the groups per step
        trains a step only when every group drawn has reward variance (a probe with P = cap = 8 skipped all 20
        steps with 3-7 of the 8 groups varying; ``docs/results/rl/README.md``)."""
        if "grpo" not in self.stages or not self.grpo_abf or self.grpo_draw_cap != self.grpo_prompts_per_step:
            return None
        return (f"train.grpo_draw_cap = train.grpo_prompts_per_step = {self.grpo_draw_cap}: a GRPO step trains only "
                "when every group drawn has reward variance, and is skipped otherwise; a cap of 2-4 times the groups "
                "per step leaves room to draw")

    @property
    def objective(self) -> str:
        """The last stage's objective (``sft`` or ``grpo``): SFT and RL laws are fitted separately."""
        return "grpo" if "grpo" in self.stages else "sft"

    parallel: Literal["fsdp", "ddp"] = "fsdp"
    """Multi-GPU rungs (one process per GPU): ``fsdp`` shards weights, gradients and optimizer state (FSDP full
    shard, ZeRO-3 like); ``ddp`` replicates them."""
    activation_checkpointing: bool | None = None
    """Recompute activations in the backward pass (less memory, about 4/3 the compute); None: on GPUs only."""
    padding_free: bool | None = None
    """Concatenate a micro-batch's sequences into one row (``position_ids`` keep attention per sequence) instead
    of padding them; None: on GPUs only."""
    chunked_loss: bool | None = None
    """TRL's chunked LM-head loss: log-probabilities computed in chunks, never the full tokens x vocabulary
    logits (needed at a 152k vocabulary); None: on GPUs only (on a CPU the plain loss is faster)."""
    save_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Dtype of the saved final model: ``auto`` is bf16 for pretrained rungs (half the storage; vLLM serves it
    as is) and float32 for proxy models."""
    checkpoint_every_min: float | None = Field(default=20.0, gt=0.0)
    """Wall-clock minutes between training checkpoints (a preempted run loses at most this much); a stop
    signal (SIGUSR2 before the time limit, SIGTERM at preemption) also saves one. None: steps only."""
    keep_checkpoints: bool = False
    """Keep ``checkpoints/`` after a run succeeds (optimizer state is about 6x the bf16 model); False deletes
    them once the final model and ``train_stats.json`` are written."""
    tokenizer: Literal["per_run", "shared"] = "per_run"
    """``shared``: one byte-level BPE tokenizer per experiment, trained once on a fixed corpus (the
    recipe at every axis's maximum) and used by every run, so per-token metrics compare; ``per_run``:
    each proxy run trains its own on its dataset (metrics then compare only per byte)."""
    max_epochs: float | None = Field(default=None, gt=0.0)
    """Most passes over a run's dataset (sequences seen / rows); a run planned above it is refused before
    training, naming the run. None allows any."""
    weight_decay: float = Field(default=0.1, ge=0.0, le=1.0, allow_inf_nan=False)
    """AdamW's decoupled weight decay of every run (and of the learning-rate scan's runs)."""
    schedule: Literal["cosine", "wsd"] = "cosine"
    """Learning-rate schedule after the linear warm-up (5% of steps): ``cosine`` decay to the run's last step,
    or ``wsd`` (warmup-stable-decay: the peak rate held, then a linear decay over the last ``wsd_decay`` share
    of steps, so checkpoints before the decay are of one constant-rate run)."""
    wsd_decay: float = Field(default=0.2, gt=0.0, le=1.0)
    """Share of a run's steps in the final decay of the ``wsd`` schedule."""


class LRScanSpec(_Frozen):
    """A learning-rate scan at a few rungs, carried to the whole ladder by a rule (``toolscale lr-scan``)."""

    rungs: list[str] = Field(min_length=1)
    """Ladder rungs scanned (two widths identify the power rule; one gives the inverse-width rule)."""
    learning_rates: list[float] = Field(min_length=2)
    """Peak learning rates tried at every scanned rung."""
    tokens_per_param: float = Field(default=6.0, gt=0.0)
    """D / N of each scan run (N as ``design.param_count`` counts it)."""
    rule: Literal["power", "inverse_width"] = "power"
    """How the best rates carry to other rungs: ``power``, ``lr(h) = lr_a (h / h_a)^-k`` with ``k`` from the
    two scanned widths (clipped to [0, 2]); ``inverse_width``, ``lr(h) = lr_a h_a / h`` (muP's Adam rule)."""
    seed: int = 0
    """Seed of the scan runs and of their dataset (the design's center point)."""

    @field_validator("learning_rates")
    @classmethod
    def _positive(cls, lrs: list[float]) -> list[float]:
        bad = [x for x in lrs if not (math.isfinite(x) and x > 0)]
        if bad:
            raise ValueError(f"learning rates must be positive, got {bad}")
        return lrs
