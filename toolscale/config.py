"""The experiment config: one frozen pydantic model, loaded from TOML.

Every stage reads its section from here and nothing else; the config is validated
once (``load_config``) and then trusted. Sections:

- ``[experiment]``: name, registry path, seeds, budget unit, target model size.
- ``[[axes]]``: the data axes of the scaling law (diversity or quality knobs).
- ``[[ladder]]``: the model-size ladder (built from config, or ``pretrained``).
- ``[design]``: the experimental design over axes x ladder (grid/).
- ``[synth]``: MCP servers and synthesis settings (synth/).
- ``[probe]``: the groundedness probe (probes/).
- ``[train]`` / ``[eval]``: training and benchmark settings (train/, eval/).
- ``[executor]``: local, debug or slurm, with SLURM pass-through (slurm/).
- ``[cost]``: training-compute cost in the budget unit (allocator/).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from toolscale.errors import ConfigError

__all__ = [
    "AxisSpec",
    "ModelSize",
    "DesignSpec",
    "LLMRoleSpec",
    "LLM_ROLES",
    "check_llm_roles",
    "SynthSpec",
    "ProbeSpec",
    "PROBE_KINDS",
    "TrainSpec",
    "EvalSpec",
    "LRScanSpec",
    "SlurmSpec",
    "ExecutorSpec",
    "CostSpec",
    "ExperimentSpec",
    "ExperimentConfig",
    "load_config",
    "read_toml",
    "parse_config",
    "format_validation_error",
    "DEFAULT_AXES",
    "DOMAINS",
    "DOMAIN_KNOBS",
    "DOMAIN_BENCHMARKS",
    "TOOL_ONLY_SYNTH",
    "BUDGET_UNITS",
    "FLOPS_PER_PARAM_TOKEN",
    "training_flops",
    "model_flops",
]

BUDGET_UNITS = ("usd", "gpu_hours")

FLOPS_PER_PARAM_TOKEN = 6.0
"""Training FLOPs per parameter per token: forward 2, backward 4 (Kaplan et al. 2020, "Scaling Laws for
Neural Language Models", section 2.1)."""


def training_flops(params: float, tokens: float) -> float:
    """Training compute ``C = 6 N D`` in FLOPs, for ``N`` parameters trained on ``D`` tokens.

    The one definition of the rule: planned runs (grid/), measured runs (train/), the probe's
    budget (probes/), imported tables (grid/importer) and the allocator's compute cost all use it.
    Embedding parameters are counted in ``N`` (the proxies are tiny, so they matter).
    Numpy arrays broadcast elementwise.

    Examples
    --------
    >>> training_flops(1e6, 2e9)
    1.2e+16
    """
    return FLOPS_PER_PARAM_TOKEN * params * tokens


def model_flops(params_nonembedding: float, tokens: float, *, n_layers: int, width: int, vocab: int,
                context: float) -> float:
    """Training FLOPs with attention and the unembedding counted: ``6 D (N + L n_ctx d + V d)``.

    Kaplan et al. (2020), Table 1: a forward pass costs ``2 N + 2 L n_ctx d`` per token (N the non-embedding
    parameters, the second term the attention logits over a context of ``n_ctx`` tokens), plus ``2 d V`` for
    the unembedding; training is three forward passes. ``6 N D`` (:func:`training_flops`) drops the two
    extra terms, which is fine at real widths (``d >> n_ctx``) and far off for CPU proxies, where attention
    over a 1,000-token context costs more than the weight matrices (``n_ctx`` is the mean training sequence).

    Examples
    --------
    >>> model_flops(41652, 1e6, n_layers=2, width=36, vocab=512, context=1024) / training_flops(41652, 1e6)
    3.2126...
    """
    return FLOPS_PER_PARAM_TOKEN * tokens * (params_nonembedding + n_layers * context * width + vocab * width)


COPY_MIN_LAYERS = 4
"""Fewest layers of a proxy that learns to copy a value from its prompt (an induction head needs two layers
of attention; the probe measurements in benchmarks/README.md found a 2-layer LM does not learn it here)."""
COPY_MIN_HEAD = 16
"""Smallest head width of such a proxy."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class AxisSpec(_Frozen):
    """One data axis of the scaling law."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Identifier, snake_case; becomes the registry column ``axis_<name>``."""
    kind: Literal["diversity", "quality", "stage"]
    """``diversity`` (more of something), ``quality`` (better supervision) or ``stage`` (a training stage's
    size, e.g. ``midtrain_tokens``: level 0 turns the stage off, so it is fitted like a quality axis on its
    range, and it changes training, not the dataset)."""
    unit: str
    """Unit of the real level, e.g. ``tools``, ``tasks``, ``databases``, ``fraction``, ``hops``."""
    min: float
    """Lowest real level in the design (in ``unit``)."""
    max: float
    """Highest real level in the design (in ``unit``)."""
    levels: int = Field(default=3, ge=1, le=64)
    """Number of distinct levels for multi-level designs (at most 64)."""
    spacing: Literal["log", "linear"] = "log"
    """Spacing of the levels between min and max."""
    integer: bool = False
    """Round real levels to integers (axes that count things)."""
    cost_per_unit: float = Field(default=0.0, ge=0.0)
    """Cost of one unit of this axis, in the budget unit (e.g. usd per tool integrated)."""
    baseline: float | None = None
    """Level a diversity-only allocation holds this axis at (quality axes); default ``min``."""
    cost_scales_with: str | None = None
    """Another axis whose level multiplies this one's cost (e.g. repair cost per task: ``task_count``)."""

    @model_validator(mode="after")
    def _check_range(self) -> "AxisSpec":
        if not (math.isfinite(self.min) and math.isfinite(self.max)):
            raise ValueError(f"axis {self.name!r}: min and max must be finite, got {self.min}..{self.max}")
        if self.max <= self.min:
            raise ValueError(
                f"axis {self.name!r}: empty range, max ({self.max}) must be greater than min ({self.min})"
            )
        if self.spacing == "log" and self.min <= 0:
            raise ValueError(f"axis {self.name!r}: log spacing needs min > 0, got {self.min}")
        if self.baseline is not None and not (self.min <= self.baseline <= self.max):
            raise ValueError(f"axis {self.name!r}: baseline {self.baseline} outside {self.min}..{self.max}")
        return self

    @property
    def baseline_level(self) -> float:
        """The level a diversity-only plan holds this axis at."""
        return self.min if self.baseline is None else self.baseline


class ModelSize(_Frozen):
    """One rung of the model ladder: built from config, or loaded with ``from_pretrained``."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Name used on the command line and in the registry (e.g. ``tiny-s``)."""
    architecture: Literal["llama", "qwen3"] = "llama"
    """Config family for proxy models built from scratch."""
    hidden_size: int = Field(default=64, ge=8)
    """Model width (proxy models)."""
    num_layers: int = Field(default=2, ge=1)
    """Transformer blocks (proxy models)."""
    num_heads: int = Field(default=2, ge=1)
    """Attention heads (proxy models)."""
    intermediate_size: int | None = None
    """MLP width; default 4 x hidden_size rounded (proxy models)."""
    vocab_size: int = Field(default=2048, ge=256)
    """Tokenizer vocabulary trained locally for proxy models."""
    max_seq_len: int = Field(default=1024, ge=64)
    """Longest sequence in tokens; longer conversations are truncated."""
    pretrained: str | None = None
    """Local folder or hub id for ``from_pretrained`` (cluster runs); None builds from config."""
    params: int | None = None
    """Parameter count N if known (pretrained models); proxy models compute theirs."""
    max_steps: int = Field(default=200, ge=1)
    """Optimizer steps of one SFT run."""
    batch_size: int = Field(default=8, ge=1)
    """Sequences per optimizer step (the global batch, over every GPU of the run)."""
    micro_batch_size: int | None = Field(default=None, ge=1)
    """Sequences per GPU (process) per forward pass; gradients accumulate over
    ``batch_size / (gpus x micro_batch_size)`` passes. None: each process's whole share at once."""
    learning_rate: float = Field(default=1e-3, gt=0)
    """Peak learning rate."""
    gpus: int = Field(default=0, ge=0)
    """GPUs per run (SLURM)."""
    cpus: int = Field(default=1, ge=1)
    """CPUs per run (SLURM / local)."""
    mem_gb: float = Field(default=4.0, gt=0)
    """Memory per run in GiB (SLURM)."""
    timeout_min: int = Field(default=30, ge=1)
    """Wall-clock limit per run in minutes (SLURM)."""

    @model_validator(mode="after")
    def _check_heads(self) -> "ModelSize":
        if self.pretrained is None:
            if self.hidden_size % self.num_heads:
                raise ValueError(f"model size {self.name!r}: hidden_size ({self.hidden_size}) must be divisible by "
                                 f"num_heads ({self.num_heads})")
            if (self.hidden_size // self.num_heads) % 2:
                raise ValueError(f"model size {self.name!r}: head width hidden_size / num_heads = "
                                 f"{self.hidden_size // self.num_heads} must be even (rotary position embeddings)")
        return self

    @property
    def ffn_size(self) -> int:
        """MLP width: ``intermediate_size`` or 4 x hidden_size."""
        return self.intermediate_size or 4 * self.hidden_size

    @property
    def approx_params(self) -> float:
        """Parameters N of the proxy model this rung builds (or ``params`` for pretrained ones).

        Llama/Qwen3 layout with untied input and output embeddings and no biases:
        ``N = 2 V h + L (4 h^2 + 3 h f + 2 h) + h`` (+ ``2 L d_head`` for Qwen3's q/k norms),
        with V the vocabulary, h the width, f the MLP width and L the layers.
        train/ builds models whose parameter count equals this number (tested there).
        """
        if self.params is not None:
            return float(self.params)
        h, f, v, n_layers = self.hidden_size, self.ffn_size, self.vocab_size, self.num_layers
        per_layer = 4 * h * h + 3 * h * f + 2 * h
        if self.architecture == "qwen3":
            per_layer += 2 * (h // self.num_heads)
        return float(2 * v * h + n_layers * per_layer + h)

    @property
    def approx_params_nonembedding(self) -> float:
        """N without the input and output embeddings (``N - 2 V h``)."""
        if self.params is not None:
            return float(self.params)
        return self.approx_params - 2 * self.vocab_size * self.hidden_size

    @property
    def copy_warning(self) -> str | None:
        """Why a proxy rung may not learn to copy a value from its prompt (held-out-database items ask for
        exactly that), or None: fewer than :data:`COPY_MIN_LAYERS` layers or a head width below
        :data:`COPY_MIN_HEAD` (the depth rule of the proxy presets: 4 layers at every rung, heads the most
        with an even head width of at least 16)."""
        if self.pretrained:
            return None
        head = self.hidden_size // self.num_heads
        if self.num_layers < COPY_MIN_LAYERS or head < COPY_MIN_HEAD:
            return (f"rung {self.name!r} has {self.num_layers} layer(s) and head width {head}: a proxy needs at least "
                    f"{COPY_MIN_LAYERS} layers and head width {COPY_MIN_HEAD} to learn to copy argument values from "
                    "the prompt")
        return None

    def counted_params(self, count: str = "total") -> float:
        """N as ``design.param_count`` counts it: ``total`` or ``nonembedding``."""
        return self.approx_params_nonembedding if count == "nonembedding" else self.approx_params

    @property
    def planned_tokens(self) -> float:
        """Training tokens D one run plans to see: steps x batch x max_seq_len (an upper bound)."""
        return float(self.max_steps * self.batch_size * self.max_seq_len)

    @property
    def planned_flops(self) -> float:
        """Planned training FLOPs of one run at this rung: ``6 N D`` with N and D as above."""
        return training_flops(self.approx_params, self.planned_tokens)

    def real_flops(self, tokens: float, context: float | None = None) -> float:
        """Training FLOPs of ``tokens`` with attention and the unembedding counted (:func:`model_flops`), at a
        mean sequence of ``context`` tokens (default ``max_seq_len``); ``6 N D`` for a pretrained rung, whose
        architecture the config does not hold."""
        if self.params is not None or self.pretrained:
            return training_flops(self.approx_params, tokens)
        return model_flops(self.approx_params_nonembedding, tokens, n_layers=self.num_layers, width=self.hidden_size,
                           vocab=self.vocab_size, context=context or self.max_seq_len)


class DesignSpec(_Frozen):
    """The experimental design over the data axes, crossed with the ladder (grid/)."""

    kind: Literal["fractional", "gsd", "lhs", "full"] = "gsd"
    """Two-level fractional factorial, generalized subset design, Latin hypercube, or full factorial."""
    resolution: int = Field(default=4, ge=3, le=6)
    """Minimum resolution for two-level fractional designs."""
    fraction_points: int | None = Field(default=None, ge=2)
    """Points of a two-level fractional design (a power of two); None = the fewest reaching ``resolution``."""
    generators: str | None = None
    """Explicit pyDOE3 ``fracfact`` generator string (e.g. ``"a b c d abc acd"``); None picks one."""
    gsd_reduction: int = Field(default=4, ge=1)
    """Reduction factor of the generalized subset design (points ~ full factorial / reduction; 1 = full)."""
    lhs_samples: int = Field(default=20, ge=2, le=100_000)
    """Points of a Latin hypercube design."""
    center_points: int = Field(default=2, ge=0)
    """Center points added to the design (noise and curvature)."""
    replicates: int = Field(default=1, ge=1)
    """Seeds per design point (replicated seeds give a noise estimate)."""
    top_fit_replicates: int | None = Field(default=None, ge=1)
    """Seeds per design point at the largest fitted rung (every cell of it): the seed noise where decisions are
    made and pure error for the lack-of-fit test; None: ``replicates``."""
    heldout_replicates: int | None = Field(default=None, ge=1)
    """Seeds per design point in the held-out cell (seed means are what the law is checked against); None:
    ``replicates``."""
    foldover: list[str] = Field(default_factory=list)
    """Axes to fold over (break their aliases); empty for no fold-over."""
    token_multipliers: list[float] = Field(default_factory=lambda: [1.0])
    """Training-token multiples crossed with each point (1.0 = the recipe's dataset once)."""
    tokens_per_param: list[float] | None = None
    """Tokens-per-parameter multiples D / N crossed with each point (e.g. ``[2, 6, 20]``), replacing
    ``token_multipliers``: a run trains ``ceil(tpp x N / (batch_size x tokens_per_sequence))`` steps, with N
    the count ``param_count`` names. None uses ``token_multipliers`` x each rung's ``max_steps``."""
    tokens_per_sequence: float = Field(default=1024.0, gt=0.0)
    """Mean non-padding tokens of one training sequence, in tokens: turns a tokens-per-parameter multiple
    into steps (measure it with the shared tokenizer; the realised D is recorded after training)."""
    param_count: Literal["total", "nonembedding"] = "total"
    """Which N the runs record, the FLOPs ``6 N D`` use and ``tokens_per_param`` multiplies: all
    parameters, or those outside the input/output embeddings (Kaplan et al. 2020). Both are recorded."""
    heldout_fraction: float = Field(default=0.25, ge=0.0, lt=1.0)
    """Share of runs, by top training FLOPs, held out from the fit."""
    min_extrapolation_factor: float = Field(default=16.0, ge=1.0)
    """Required ratio of the largest held-out run's FLOPs to the largest fitted run's."""
    heldout_points: int | None = Field(default=None, ge=1)
    """Design points the top-FLOPs cell (largest rung x largest token multiplier) is crossed with, a
    D-optimal subset; None sizes it so that cell is the held-out share: ceil(f / (1 - f) x other runs)."""
    constraints: list[str] = Field(default_factory=list)
    """Constraints between axes, ``"task_count >= tool_diversity"`` or ``"a <= 2 * b"``; violated points
    move their left-hand axis onto the bound."""
    seed: int = 0
    """Seed of randomized designs (LHS) and of the run seeds."""


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
        if "grpo" in self.stages and self.grpo_envs is None and self.grpo_curriculum and self.grpo_n_envs < 3:
            raise ValueError(f"train.grpo_n_envs = {self.grpo_n_envs}: the curriculum's 3 phases need 3 or more "
                             "environments (or set train.grpo_curriculum = false)")
        if self.grpo_abf and self.grpo_draw_cap < self.grpo_prompts_per_step:
            raise ValueError(f"train.grpo_draw_cap = {self.grpo_draw_cap} is below train.grpo_prompts_per_step = "
                             f"{self.grpo_prompts_per_step}: no step could ever be filled")
        if (self.warmstart_n_envs == 0) != (self.warmstart_steps == 0):
            raise ValueError(f"train.warmstart_n_envs = {self.warmstart_n_envs} and train.warmstart_steps = "
                             f"{self.warmstart_steps}: set both to 0 (no warm start) or both above 0")
        return self

    @property
    def objective(self) -> str:
        """The last stage's objective (``sft`` or ``grpo``): SFT and RL laws are fitted separately."""
        return "grpo" if "grpo" in self.stages else "sft"
    threads: int = Field(default=2, ge=1)
    """torch CPU threads per run."""
    save_checkpoints: bool = True
    """Write checkpoints so a preempted run resumes."""
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


class SlurmSpec(_Frozen):
    """SLURM pass-through parameters."""

    partition: str | None = None
    """``--partition``."""
    account: str | None = None
    """``--account``."""
    qos: str | None = None
    """``--qos``."""
    constraint: str | None = None
    """``--constraint``."""
    additional_parameters: dict[str, str | int | bool] = Field(default_factory=dict)
    """Extra sbatch flags, e.g. ``{mail_type = "FAIL"}``."""
    cpu_partition: str | None = None
    """Partition of the CPU-only jobs (the dataset array); default ``partition``."""


class ExecutorSpec(_Frozen):
    """Where runs execute (slurm/)."""

    kind: Literal["local", "slurm", "debug"] = "local"
    """submitit executor."""
    max_parallel: int = Field(default=1, ge=1)
    """Runs at once (SLURM array parallelism, local workers)."""
    max_attempts: int = Field(default=2, ge=1)
    """Attempts per run before it stays failed."""
    folder: str = "./runs"
    """Root of submitit folders and result files."""
    slurm: SlurmSpec = Field(default_factory=SlurmSpec)
    """SLURM parameters."""
    signal_delay_s: int = Field(default=300, ge=10)
    """Seconds before the time limit that SLURM sends SIGUSR2 (save a checkpoint, then requeue); long enough to
    write a checkpoint to the shared file system (4B: about 50 GB of weights and optimizer state)."""
    requeue: bool = True
    """Submit with ``--requeue``, so SLURM requeues a preempted or failed-node job even where ``JobRequeue=0``."""
    dataset_array: bool = True
    """SLURM: build the launch's datasets in a CPU-only job array first (one task per dataset); the GPU arrays
    depend on it (``afterany``), so GPUs never wait on synthesis."""
    dataset_cpus: int = Field(default=4, ge=1)
    """CPUs per task of the dataset array."""
    dataset_mem_gb: float = Field(default=16.0, gt=0)
    """Memory per task of the dataset array, in GiB."""
    dataset_timeout_min: int = Field(default=120, ge=1)
    """Time limit per task of the dataset array, in minutes."""
    offline: bool = False
    """Compute nodes cannot reach the Hugging Face hub: every ``pretrained`` must be a local folder (``preflight``
    and ``launch`` refuse a hub id) and jobs run with ``HF_HUB_OFFLINE=1``."""
    storage_quota_gb: float | None = Field(default=None, gt=0)
    """Space the runs may use under ``folder``, in GB; ``preflight`` refuses a design whose storage estimate
    exceeds it (or the free space, when None)."""


class CostSpec(_Frozen):
    """Training compute as a cost in the budget unit (allocator/)."""

    per_pflop: float = Field(default=0.0, ge=0.0)
    """Cost of 1e15 training FLOPs in the budget unit; 0 ignores compute in allocations. Measure it on pilot
    runs with ``toolscale calibrate-cost`` (GPU-hours from ``sacct`` over measured FLOPs)."""
    tokens_per_task: float = Field(default=400.0, gt=0.0)
    """Average training tokens a synthesised task adds (for compute cost)."""
    gpu_hour_usd: float | None = Field(default=None, gt=0.0)
    """Price of one GPU-hour in usd: prices the GPU-seconds below (and ``calibrate-cost``'s per_pflop) when
    ``budget_unit = "usd"``; with ``gpu_hours`` a GPU-hour costs 1."""
    eval_gpu_s_per_run: float = Field(default=0.0, ge=0.0)
    """GPU-seconds the evaluation of one trained model takes (vLLM serve and score), in seconds; ``allocate``
    charges it once per plan (``calibrate-cost`` measures it)."""
    synth_gpu_s_per_task: float = Field(default=0.0, ge=0.0)
    """GPU-seconds a self-hosted synthesis LLM (``[synth.llm]`` on your vLLM) spends per task, in seconds; 0 when
    synthesis uses a paid API (whose price is in the task axis' cost_per_unit) or offline templates."""

    def gpu_hour_cost(self, gpu_hour_usd: float | None = None, unit: str = "usd") -> float | None:
        """One GPU-hour in the budget unit: 1 for ``gpu_hours``, else ``gpu_hour_usd`` (the argument wins)."""
        if unit == "gpu_hours":
            return 1.0
        return gpu_hour_usd if gpu_hour_usd is not None else self.gpu_hour_usd


class ExperimentSpec(_Frozen):
    """Identity and bookkeeping of the experiment."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """Experiment name, unique in the registry."""
    registry: str = "./toolscale.duckdb"
    """Path of the DuckDB registry file."""
    seeds: list[int] = Field(default_factory=lambda: [0])
    """Base seeds; replicates draw from these."""
    budget_unit: Literal["usd", "gpu_hours"] = "usd"
    """Unit of every cost and budget."""
    target_model_size: str | None = None
    """Ladder rung the experiment is for: allocations plan for it, the probe's cost is a share of its
    training FLOPs (None = the largest rung)."""
    domain: Literal["tools", "code"] = "tools"
    """Task domain of the data (``synth.domains``): ``tools`` (tool calls over MCP servers) or ``code`` (code
    agents writing Python modules from specs; ``tool_diversity`` counts library APIs, ``db_diversity``
    repositories, ``spec_dependency`` is its quality axis). Every later stage is the same."""


class ExperimentConfig(_Frozen):
    """A whole experiment: what to vary, what to train, where to run, what it costs."""

    experiment: ExperimentSpec
    """Identity and bookkeeping."""
    axes: list[AxisSpec]
    """Data axes (at least one)."""
    ladder: list[ModelSize] = Field(default_factory=list)
    """Model sizes (at least one to design, train or allocate; a config for imported runs may have none,
    their model sizes being parameter counts)."""
    design: DesignSpec = Field(default_factory=DesignSpec)
    """Experimental design."""
    synth: SynthSpec = Field(default_factory=SynthSpec)
    """Synthesis."""
    probe: ProbeSpec = Field(default_factory=ProbeSpec)
    """Groundedness probe."""
    train: TrainSpec = Field(default_factory=TrainSpec)
    """Training."""
    eval: EvalSpec = Field(default_factory=EvalSpec)
    """Evaluation."""
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    """Executor."""
    cost: CostSpec = Field(default_factory=CostSpec)
    """Compute cost."""
    lr_scan: LRScanSpec | None = None
    """Learning-rate scan whose rule sets every rung's rate (``toolscale lr-scan``); None uses each rung's own."""

    @field_validator("axes")
    @classmethod
    def _unique_axes(cls, axes: list[AxisSpec]) -> list[AxisSpec]:
        if not axes:
            raise ValueError("at least one axis is required")
        names = [a.name for a in axes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate axis names: {', '.join(dup)}")
        return axes

    @field_validator("ladder")
    @classmethod
    def _unique_sizes(cls, ladder: list[ModelSize]) -> list[ModelSize]:
        names = [m.name for m in ladder]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate model size names: {', '.join(dup)}")
        for small, big in zip(ladder, ladder[1:]):
            if big.approx_params < small.approx_params:
                raise ValueError(f"the ladder must list rungs from smallest to largest parameter count N; "
                                 f"{big.name!r} (N = {big.approx_params:.4g}) comes after {small.name!r} "
                                 f"(N = {small.approx_params:.4g})")
        return ladder

    @model_validator(mode="after")
    def _cross_checks(self) -> "ExperimentConfig":
        sizes = [m.name for m in self.ladder]
        target = self.experiment.target_model_size
        if target is not None and target not in sizes:
            raise ValueError(f"experiment.target_model_size {target!r} is not in the ladder ({', '.join(sizes)})")
        axes = [a.name for a in self.axes]
        for a in self.axes:
            if a.cost_scales_with is not None and (a.cost_scales_with not in axes or a.cost_scales_with == a.name):
                raise ValueError(f"axis {a.name!r}: cost_scales_with must name another axis, got "
                                 f"{a.cost_scales_with!r}; known: {', '.join(axes)}")
        if self.lr_scan is not None:
            unknown = [r for r in self.lr_scan.rungs if r not in sizes]
            if unknown:
                raise ValueError(f"lr_scan.rungs names unknown rungs {unknown}; known: {', '.join(sizes)}")
        if self.train.tokenizer == "shared":
            vocab = {m.vocab_size for m in self.ladder if not m.pretrained}
            if len(vocab) > 1:
                raise ValueError(f"train.tokenizer = 'shared' needs one vocab_size for every proxy rung, got "
                                 f"{sorted(vocab)}")
        for a in self.axes:
            if a.kind == "stage" and a.name not in STAGE_AXES:
                raise ValueError(f"axis {a.name!r} has kind 'stage', which only {', '.join(STAGE_AXES)} can have")
            if a.name in STAGE_AXES and a.kind != "stage":
                raise ValueError(f"axis {a.name!r} must have kind 'stage'")
            if a.name in STAGE_AXES and STAGE_AXES[a.name] not in self.train.stages:
                raise ValueError(f"axis {a.name!r} needs {STAGE_AXES[a.name]!r} in train.stages")
        midtrain = "midtrain" in self.train.stages
        if midtrain and self.train.midtrain_corpus is None and not self.synth.narratives:
            raise ValueError("stage 'midtrain' has no corpus: set synth.narratives = true (each run's synthesised "
                             "corpus.jsonl) or train.midtrain_corpus = a JSONL file of {\"text\"} documents")
        gpu_s = self.cost.eval_gpu_s_per_run > 0 or self.cost.synth_gpu_s_per_task > 0
        if gpu_s and self.experiment.budget_unit == "usd" and self.cost.gpu_hour_usd is None:
            raise ValueError("cost.eval_gpu_s_per_run / synth_gpu_s_per_task are GPU-seconds: set cost.gpu_hour_usd "
                             "(the price of a GPU-hour) to charge them in usd")
        bad = [f for f in self.design.foldover if f not in axes]
        if bad:
            raise ValueError(f"design.foldover names unknown axes {bad}; known: {', '.join(axes)}")
        if self.experiment.domain == "code":
            _check_code_domain(self)
        return self

    @model_validator(mode="before")
    @classmethod
    def _domain_benchmarks(cls, data: Any) -> Any:
        # a code experiment without [eval].benchmarks (or .validation) scores the code domain's benchmarks
        if isinstance(data, dict) and isinstance(data.get("experiment"), dict) \
                and data["experiment"].get("domain") == "code":
            ev = data.get("eval")
            if ev is None or isinstance(ev, dict):
                ev = dict(ev or {})
                ev.setdefault("benchmarks", list(DOMAIN_BENCHMARKS["code"]))
                ev.setdefault("validation", DOMAIN_VALIDATION["code"])
                data = {**data, "eval": ev}
        return data

    def axis(self, name: str) -> AxisSpec:
        """The axis called ``name``; ConfigError listing the known ones otherwise."""
        for a in self.axes:
            if a.name == name:
                return a
        raise ConfigError(f"unknown axis {name!r}; known: {', '.join(a.name for a in self.axes)}")

    def model_size(self, name: str) -> ModelSize:
        """The ladder rung called ``name``; ConfigError listing the known ones otherwise."""
        for m in self.ladder:
            if m.name == name:
                return m
        raise ConfigError(f"unknown model size {name!r}; known: {', '.join(m.name for m in self.ladder)}")

    @property
    def target_size(self) -> ModelSize:
        """The rung the experiment is for: ``experiment.target_model_size``, else the largest rung.

        The ladder is validated to run from smallest to largest N, so the largest is the
        last (on a tie in N, the last of the tied rungs). Allocation, the probe's cost
        budget and the pipeline all use this one rule.
        """
        name = self.experiment.target_model_size
        if not name and not self.ladder:
            raise ConfigError("the config has no [[ladder]]: add model sizes (or experiment.target_model_size) "
                              "to plan for a target size")
        return self.model_size(name) if name else self.ladder[-1]

    def require_ladder(self, purpose: str) -> list[ModelSize]:
        """The ladder; ConfigError naming ``purpose`` when the config has none (configs for imported runs)."""
        if not self.ladder:
            raise ConfigError(f"{purpose} needs model sizes: the config has no [[ladder]] (only imported runs "
                              "can do without one)")
        return self.ladder


DEFAULT_AXES: tuple[str, ...] = (
    "tool_diversity",
    "task_count",
    "db_diversity",
    "repair_rate",
    "coverage_quota",
    "support_depth",
)

DOMAINS: tuple[str, ...] = ("tools", "code")
"""Task domains (``[experiment] domain``; ``synth.domains``)."""

DOMAIN_KNOBS: dict[str, tuple[str, ...]] = {
    "tools": DEFAULT_AXES,
    "code": ("tool_diversity", "task_count", "db_diversity", "spec_dependency", "repair_rate", "support_depth"),
}
"""Recipe knobs each domain takes as data axes (``synth.models.AXIS_KNOBS``, ``synth.code.models.CODE_AXIS_KNOBS``)."""

DOMAIN_BENCHMARKS: dict[str, tuple[str, ...]] = {
    "tools": ("indist-calls", "heldout-servers"),
    "code": ("code-indist", "code-heldout-apis"),
}
"""Each domain's two fixed benchmarks: in-distribution, then held out (servers, APIs)."""

DOMAIN_VALIDATION: dict[str, str] = {"tools": "valid-calls", "code": "code-valid"}
"""Each domain's validation benchmark (``[eval] validation``): it chooses checkpoints and learning rates."""

TOOL_ONLY_SYNTH: dict[str, str] = {
    "servers": "MCP servers for tool synthesis",
    "arg_values": "argument values for the user's MCP servers",
    "heldout_servers": "bundled MCP servers held out for evaluation",
    "min_tools": "the tool-count pruning of collected MCP servers",
    "transform_rate": "transformed tool-call arguments",
    "max_chain_len": "the length of tool chains",
    "max_turns": "turns of an LLM tool-calling policy",
    "judge_threshold": "the trajectory judge of tool calls",
    "llm_url": "the LLM judge of tool calls",
    "llm": "LLM roles of tool synthesis",
    "narratives": "the mid-training corpus of tool ecosystems",
    "narrative_min_judge": "the mid-training corpus of tool ecosystems",
    "narrative_min_coherence": "the mid-training corpus of tool ecosystems",
}
"""``[synth]`` settings only the tool domain uses, with what they are for: a code experiment that sets one to other
than its default is refused, naming it."""


def _check_code_domain(cfg: "ExperimentConfig") -> None:
    """Refuse settings a code experiment cannot use: one line naming the setting."""
    for name in sorted(n for n in TOOL_ONLY_SYNTH if getattr(cfg.synth, n) !=
                       SynthSpec.model_fields[n].get_default(call_default_factory=True)):
        raise ValueError(f"synth.{name} is a tool-domain setting ({TOOL_ONLY_SYNTH[name]}); experiment.domain = "
                         f"'code' does not use it: remove it")
    knobs = DOMAIN_KNOBS["code"]
    for a in cfg.axes:
        if a.kind != "stage" and a.name not in knobs:
            raise ValueError(f"axis {a.name!r} is not a knob of the code domain; its knobs: {', '.join(knobs)}")
    if "grpo" in cfg.train.stages:
        raise ValueError("train.stages 'grpo' trains on the tool domain's environments; experiment.domain = 'code' "
                         "has no GRPO stage yet (its RL environments are synth.code.env)")


def format_validation_error(err: ValidationError, source: str = "config") -> list[str]:
    """One line per problem: ``source: field.path: message (got value)``."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = e["msg"].removeprefix("Value error, ")
        got = e.get("input")
        shown = "" if isinstance(got, dict | list) or got is None else f" (got {got!r})"
        lines.append(f"{source}: {loc}: {msg}{shown}")
    return lines


def parse_config(data: dict, source: str = "config") -> ExperimentConfig:
    """Validate a config mapping; ConfigError whose message lists every problem, one per line."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError("\n".join(format_validation_error(err, source))) from None


def read_toml(path: str | Path, *, kind: str, error: type[Exception] = ConfigError, hint: str = "") -> dict:
    """The TOML file at ``path`` as a dict; ``error`` naming the file if it is missing or not TOML.

    ``kind`` names the file in messages (``config``, ``recipe``, ``truth``); ``hint`` is appended
    to the not-found message (e.g. how to write one).
    """
    p = Path(path)
    if not p.is_file():
        raise error(f"{kind} file not found: {p}{hint}")
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise error(f"{p}: not valid TOML: {err}") from None
    except RecursionError:
        raise error(f"{p}: not valid TOML here: arrays or tables nested too deeply") from None
    except UnicodeDecodeError as err:
        raise error(f"{p}: not valid TOML: not UTF-8 text ({err.reason} at byte {err.start})") from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML config; ConfigError naming the file and each bad field.

    Files the config names for training (``train.midtrain_corpus``, ``train.grpo_envs``) must exist, and
    the corpus must be JSONL with a non-empty string ``text`` on every line, so a bad one fails here,
    before anything runs.
    """
    cfg = parse_config(read_toml(path, kind="config"), source=str(path))
    _check_train_files(cfg.train, str(path))
    return cfg


def _check_train_files(train: TrainSpec, source: str) -> None:
    import json

    if train.grpo_envs is not None and not Path(train.grpo_envs).is_file():
        raise ConfigError(f"{source}: train.grpo_envs {train.grpo_envs!r} does not exist "
                          "(write one with `toolscale envs build`)")
    if train.midtrain_corpus is None:
        return
    corpus = Path(train.midtrain_corpus)
    if not corpus.is_file():
        raise ConfigError(f"{source}: train.midtrain_corpus {str(corpus)!r} does not exist")
    with corpus.open(encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                doc = None
            if not isinstance(doc, dict) or not isinstance(doc.get("text"), str) or not doc["text"].strip():
                raise ConfigError(f"{source}: train.midtrain_corpus {str(corpus)!r} line {n} is not a JSON object "
                                  "with a non-empty string 'text'")


RUN_SECTIONS: tuple[str, ...] = ("axes", "ladder", "design", "synth", "probe", "train", "eval", "lr_scan")
"""Config sections that change what a run trains or how it is scored (``[executor]`` and ``[cost]`` do not)."""

OPERATIONAL_KEYS: frozenset[str] = frozenset({
    "experiment.registry", "train.checkpoint_every_min", "train.keep_checkpoints", "eval.vllm", "eval.vllm_args",
    "eval.vllm_startup_s", "eval.concurrency", "eval.endpoint"})
"""Keys inside those sections that change where or how a run executes, not its result (a rung's resources too)."""

_RUNG_RESOURCES = frozenset({"gpus", "cpus", "mem_gb", "timeout_min", "micro_batch_size"})


def run_settings(config: dict[str, Any]) -> dict[str, Any]:
    """``{dotted key: value}`` of a config dump (``model_dump(mode="json")``) that changes runs: the
    :data:`RUN_SECTIONS` and the experiment's domain, without :data:`OPERATIONAL_KEYS` and rung resources."""
    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, v in enumerate(value):
                walk(f"{prefix}[{v.get('name', i)}]", v)
        else:
            flat[prefix] = value

    for section in RUN_SECTIONS:
        walk(section, config.get(section))
    flat["experiment.domain"] = (config.get("experiment") or {}).get("domain", "tools")
    return {k: v for k, v in flat.items()
            if k not in OPERATIONAL_KEYS and not (k.startswith("ladder[") and k.rsplit(".", 1)[-1] in _RUNG_RESOURCES)}


def config_hash(config: "ExperimentConfig | dict[str, Any]") -> str:
    """Content hash of a config's run settings (:func:`run_settings`): ``cfg-`` + 16 hex digits of SHA-256."""
    import hashlib
    import json

    dump = config if isinstance(config, dict) else config.model_dump(mode="json")
    text = json.dumps(run_settings(dump), sort_keys=True, separators=(",", ":"), default=str)
    return "cfg-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def config_differences(stored: dict[str, Any], given: "ExperimentConfig | dict[str, Any]") -> list[str]:
    """Dotted keys whose run settings differ between a stored config dump and ``given``, sorted."""
    a = run_settings(stored)
    b = run_settings(given if isinstance(given, dict) else given.model_dump(mode="json"))
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
