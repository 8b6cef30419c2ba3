"""Each stage's settings: synthesis (with the LLM roles and the user's servers), probes, training, evaluation,
the learning-rate scan."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator


from toolscale.config.base import _Frozen

__all__ = ["EvalSpec", "LLMRoleSpec", "LLM_ROLES", "LRScanSpec", "PROBE_KINDS", "ProbeSpec", "STAGES", "STAGE_AXES", "SynthSpec", "TrainSpec", "UserServer", "check_llm_roles"]


LLM_ROLES: tuple[str, ...] = ("task_writer", "policy", "emulator", "judge")
"""The LLM roles of synthesis; a role left out of ``[synth.llm]`` keeps its offline template."""


class LLMRoleSpec(_Frozen):
    """One LLM role's endpoint (``[synth.llm.<role>]`` in a config, ``[llm.<role>]`` in a recipe).

    Any server that speaks OpenAI chat completions works (vLLM, SGLang, TGI, a hosted API,
    ``toolscale serve-model``). The API key is read from the environment variable named by
    ``api_key_env``, never from the file.
    """

    base_url: str = Field(pattern=r"^https?://[^\s/]+")
    """Endpoint root including the API prefix, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str = Field(min_length=1)
    """Model name sent in each request (``/models`` must list it when the endpoint has that route)."""
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Environment variable holding the API key (sent as ``Authorization: Bearer``); None sends none."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, strict=True, allow_inf_nan=False)
    """Sampling temperature (0 = greedy)."""
    max_tokens: int = Field(default=1024, ge=1, strict=True)
    """Most completion tokens per request, in tokens."""
    concurrency: int = Field(default=8, ge=1, strict=True)
    """Requests in flight at once for this role, in requests."""
    timeout_s: float = Field(default=60.0, gt=0.0, strict=True, allow_inf_nan=False)
    """Seconds one request may take before it is retried (then fails), in seconds."""
    max_tries: int = Field(default=4, ge=1, le=20, strict=True)
    """Attempts per request on 429, 5xx, timeouts and malformed replies (bounded), in attempts."""
    price_in: float = Field(default=0.0, ge=0.0, strict=True, allow_inf_nan=False)
    """Price of input (prompt) tokens, in dollars per 1M tokens."""
    price_out: float = Field(default=0.0, ge=0.0, strict=True, allow_inf_nan=False)
    """Price of output (completion) tokens, in dollars per 1M tokens."""


def check_llm_roles(roles: dict) -> dict:
    """Reject unknown role names with the valid ones (used by the config and the recipe)."""
    import difflib

    for name in roles:
        if name not in LLM_ROLES:
            close = difflib.get_close_matches(str(name), LLM_ROLES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown LLM role {name!r}{hint}; expected one of {', '.join(LLM_ROLES)}")
    return roles


class UserServer(_Frozen):
    """One of your stdio MCP servers as a table (``[[synth.servers]]``); a plain string is ``command`` alone."""

    command: str = Field(min_length=1)
    """The command line (``"python -m mcp_server_git --repository /data/repo"``)."""
    scratch: str | None = Field(default=None, pattern=r"^copy:.+")
    """``"copy:PATH"``: copy PATH for each job and start the server on the copy (PATH, which must appear in
    ``command``, is never touched; results name PATH, not the copy). Write tools run only with it, or
    under ``emulate_writes``."""
    emulate_writes: bool = False
    """Play the server's write tools (not read-only by their MCP annotations or name) with the emulator
    instead of running them; without this or ``scratch`` they are left out, with a warning."""


class SynthSpec(_Frozen):
    """Synthesis settings (``[synth]``): declared once, here; ``synth.models.Recipe`` is these settings plus the
    grid's axis knobs and a seed (it subclasses this model), so ``validate`` and a job accept the same values."""

    servers: list[str | UserServer] = Field(default_factory=list)
    """Your stdio MCP servers as command lines (``"python -m mcp_server_git --repository /data/repo"``):
    collected and executed live in ``synth`` and in every pipeline job (one session per server per job);
    their tools join the bundled ones for ``tool_diversity``."""
    arg_values: dict[str, list[str | int | float | bool]] = Field(default_factory=dict)
    """Values tasks may state for an argument of your servers' tools, by argument name
    (``{ repo_path = ["/data/repo"] }``); other arguments get generated values."""
    max_turns: int = Field(default=32, ge=1, le=256)
    """Most assistant turns of an LLM policy per trajectory (ASTRA: 32), in turns."""
    tool_spread: Literal["servers", "stratified"] = "servers"
    """How ``tool_diversity`` tools are drawn: ``servers`` (whole servers in a seeded order: a small level covers
    few servers) or ``stratified`` (one tool per server in turn: the tool axis then measures diversity, not
    which servers a benchmark's items fall on)."""
    min_tools: int = Field(default=3, ge=1)
    """Servers from the registry (``--with-collected``, ASTRA imports) with fewer usable tools are
    quarantined (ASTRA's pruning rule); servers you name in ``servers`` are never held to it."""
    heldout_servers: list[str] = Field(default_factory=list)
    """Bundled server names reserved for evaluation; empty uses the package default."""
    error_rate: float = Field(default=0.2, ge=0.0, le=1.0)
    """Probability that a tool call gets an injected error (timeout, unreachable, invalid argument)."""
    defect_rate: float = Field(default=0.3, ge=0.0, le=1.0)
    """Share of actions synthesised non-derivable before repair (makes quality a real axis)."""
    transform_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    """Share of arguments the visible history shows only transformed (``synth.transforms``); such actions
    stay derivable, exact-match provenance misses them."""
    max_chain_len: int = Field(default=4, ge=1, le=8)
    """Most tool calls in a task's plan (retries not counted), in calls."""
    backend: Literal["live", "emulator"] = "emulator"
    """Roll out against live stdio servers or the stateful emulator."""
    judge_threshold: float = Field(default=0.7, ge=0.0, le=1.0)
    """Minimum mean judge score a trajectory needs to be kept."""
    llm_url: str | None = None
    """Legacy LLM judge endpoint (model name ``judge``, no key); prefer ``[synth.llm.judge]``."""
    narratives: bool = False
    """Also write the mid-training corpus (``corpus.jsonl``, seed 001) with every dataset."""
    narrative_min_judge: float = Field(default=0.7, ge=0.0, le=1.0)
    """Corpus judge gate: minimum mean judge score of a document's trajectory."""
    narrative_min_coherence: int = Field(default=4, ge=1, le=5)
    """Corpus coherence gate, 1-5."""
    llm: dict[str, LLMRoleSpec] = Field(default_factory=dict)
    """LLM endpoints per role (``[synth.llm.task_writer]``, ``policy``, ``emulator``, ``judge``); a role
    left out keeps its offline template."""

    @field_validator("llm")
    @classmethod
    def _known_roles(cls, roles: dict) -> dict:
        return check_llm_roles(roles)


PROBE_KINDS: tuple[str, ...] = ("copy", "lm", "hf:MODEL_DIR")
"""Groundedness probe kinds (``[probe].kind``): the training-free copy scorer, the learned LM probe, or any
saved causal LM (``hf:`` followed by its folder)."""


class ProbeSpec(_Frozen):
    """The groundedness probe (probes/)."""

    kind: str = "copy"
    """Probe kind, one of :data:`PROBE_KINDS`: ``copy`` (training-free, the CPU default), ``lm`` (a tiny LM
    trained on the data, cross-fitted) or ``hf:MODEL_DIR`` (a saved causal LM scored as is)."""
    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v: str) -> str:
        if v in ("copy", "lm") or (v.startswith("hf:") and len(v) > 3):
            return v
        raise ValueError(f"unknown probe kind {v!r}; known kinds: {', '.join(PROBE_KINDS)}")

    model: str = "probe"
    """Ladder-style name of the probe model (built from the fields below)."""
    hidden_size: int = Field(default=64, ge=8)
    """Probe model width."""
    num_layers: int = Field(default=2, ge=1)
    """Probe model depth."""
    train_steps: int = Field(default=400, ge=1)
    """Probe training steps per fold (a tiny probe needs a few hundred to learn to copy identifiers)."""
    sample_size: int = Field(default=256, ge=1)
    """Trajectories each probe trains on (more costs no FLOPs: steps x batch x window fix them)."""
    max_cost_share: float = Field(default=0.05, gt=0.0, le=1.0)
    """Budget for probe FLOPs as a share of the target training run's FLOPs."""
    num_heads: int = Field(default=4, ge=1)
    """Probe attention heads."""
    vocab_size: int = Field(default=512, ge=263)
    """Probe tokenizer vocabulary (byte-level BPE trained on the sample), in tokens."""
    max_seq_len: int = Field(default=512, ge=64)
    """Longest probe window in tokens; longer histories keep their last ``max_seq_len`` tokens."""
    batch_size: int = Field(default=8, ge=1)
    """Sequences per probe training step and per scoring batch."""
    learning_rate: float = Field(default=1e-2, gt=0)
    """Probe peak learning rate (AdamW, linear warm-up then cosine decay)."""
    calibration_fraction: float = Field(default=0.5, gt=0.0, lt=1.0)
    """Share of trajectories in the calibration split; the rest measure agreement."""
    coverage_depth: int = Field(default=3, ge=1)
    """Largest support depth k counted by compositional coverage (hops)."""
    coverage_quota: int = Field(default=1, ge=1)
    """Trajectories a (structure, depth) cell needs to count as covered."""
    seed: int = 0
    """Seed of the probe's sample, initialisation and calibration split."""
    mask: str = "all"
    """Masking strategy registered in ``probes.masking`` for ``lm`` and ``hf:`` probes; none reads
    provenance labels (``all``: every earlier observation; ``latest``: the latest one)."""
    folds: int = Field(default=2, ge=2)
    """Cross-fitting folds of the ``lm`` probe: each fold is scored by a probe trained on the others."""
    copy_curriculum: float = Field(default=0.3, ge=0.0, le=1.0)
    """``lm`` probe: share of the first training steps in which half of the rows are copy exercises (a
    random earlier span of the trajectory repeated at its end), so the tiny model learns to copy early."""
    mask_drop: float = Field(default=0.15, ge=0.0, lt=1.0)
    """``lm`` probe: probability that an observation's content is replaced by the learned mask token in a
    training sequence (teaches the mask)."""
    enforce_budget: bool = True
    """Score only a random subset of trajectories when scoring all would exceed ``max_cost_share``."""


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


class EvalSpec(_Frozen):
    """Benchmarks scored after training (eval/)."""

    benchmarks: list[str] = Field(default_factory=lambda: ["heldout-calls"])
    """Benchmark names from eval's registry; the first is the default for fit and allocate."""
    limit: int | None = Field(default=None, ge=1)
    """Items per benchmark (None = all)."""
    generate_limit: int | None = Field(default=None, ge=1)
    """Of those, items that are also generated and matched (accuracy, ``field_match``), the same
    stratified choice for every run; the rest are only scored (``loss``, ``bpb``, ``token_prob``).
    None generates every item."""
    validation: str | None = "valid-calls"
    """Benchmark that chooses among a run's checkpoints (and the learning-rate scan's rates): fixed items on
    databases disjoint from every test benchmark (an overlap is refused, naming how many items); None: no
    checkpoints are scored and each run is scored at its end only."""
    validation_limit: int | None = Field(default=None, ge=1)
    """Validation items scored per checkpoint (stratified, the same for every run); None: all."""
    checkpoints: int = Field(default=6, ge=0)
    """Checkpoints kept and scored per run, evenly spaced, the last at the final step: each on the validation
    benchmark, and the best one and the last on the test benchmarks (``checkpoint_tests``); 0: the final model
    only. A run with fewer steps than checkpoints is refused before it trains."""
    checkpoint_tests: Literal["chosen", "all"] = "chosen"
    """Which checkpoints the test benchmarks score: ``chosen`` (the one best on validation, and the last),
    or ``all`` (every checkpoint: ``fit --target checkpoints`` on a test benchmark needs it; costs K test
    evaluations per run)."""
    backend: Literal["transformers", "openai", "vllm", "vllm-server"] = "transformers"
    """Generation backend: ``transformers`` (in the job; CUDA when there is a device), ``vllm-server`` (each job
    serves its model with ``vllm serve`` from the ``vllm`` environment and generates and scores through it),
    ``openai`` (a server you run, at ``endpoint``), ``vllm`` (in-process, where ``import vllm`` works)."""
    endpoint: str | None = None
    """OpenAI-compatible server URL for the ``openai`` backend (and ``vllm-server`` without ``vllm``)."""
    vllm: str | None = None
    """The separate vLLM environment (a folder with ``bin/vllm``, e.g. ``~/vllm-env``) the ``vllm-server``
    backend starts ``vllm serve`` from; vLLM pins its own torch, so it cannot share the training venv."""
    vllm_args: list[str] = Field(default_factory=list)
    """Extra ``vllm serve`` arguments, e.g. ``["--tensor-parallel-size", "4", "--max-model-len", "8192"]``."""
    vllm_startup_s: float = Field(default=1200.0, gt=0.0)
    """Seconds to wait for ``vllm serve`` to answer ``/health``."""
    concurrency: int = Field(default=32, ge=1)
    """Requests in flight to the server (``vllm-server``)."""

    @model_validator(mode="after")
    def _server(self) -> "EvalSpec":
        if self.backend == "vllm-server" and not (self.vllm or self.endpoint):
            raise ValueError("eval.backend 'vllm-server' needs eval.vllm (the vLLM environment, e.g. '~/vllm-env') "
                             "or eval.endpoint (a server already running)")
        return self


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
