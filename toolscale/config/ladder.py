"""The experiment's axes, its model ladder and its design."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator


from toolscale.config.base import COPY_MIN_HEAD, COPY_MIN_LAYERS, _Frozen, model_flops, training_flops

__all__ = ["AxisSpec", "DesignSpec", "ModelSize"]


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
