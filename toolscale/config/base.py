"""Units, FLOPs and the frozen base model every settings section uses."""

from __future__ import annotations


from pydantic import BaseModel, ConfigDict



__all__ = ["BUDGET_UNITS", "CHECKPOINT_SPACINGS", "COPY_MIN_HEAD", "COPY_MIN_LAYERS", "FLOPS_PER_PARAM_TOKEN", "kept_steps",
           "min_kept_steps", "model_flops", "training_flops"]


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


CHECKPOINT_SPACINGS = ("linear", "log")
"""How a run's kept checkpoints are spaced (``[eval] checkpoint_spacing``, :func:`kept_steps`)."""


def kept_steps(max_steps: int, k: int, spacing: str = "linear") -> list[int]:
    """The ``k`` optimizer steps at which a run keeps its model, the last at ``max_steps`` (``[]`` for ``k = 0``).

    ``linear``: evenly spaced, ``round(i max_steps / k)`` for ``i = 1 .. k``. ``log``: each one half of the next,
    ``round(max_steps 2^(i - k))``, so that a run whose validation loss is lowest early (a large model on
    little unique data) still has checkpoints near its optimum. ValueError when the steps are fewer than ``k``
    distinct ones (a run too short for ``k`` checkpoints) or the spacing is unknown."""
    if spacing not in CHECKPOINT_SPACINGS:
        raise ValueError(f"checkpoint spacing must be one of {', '.join(CHECKPOINT_SPACINGS)}, got {spacing!r}")
    if k <= 0:
        return []
    if spacing == "linear":
        steps = {round(i * max_steps / k) for i in range(1, k + 1)}
    else:
        steps = {round(max_steps * 2.0 ** (i - k)) for i in range(1, k + 1)}
    steps.discard(0)
    if len(steps) < k:
        raise ValueError(f"{k} {spacing}-spaced checkpoints need at least {min_kept_steps(k, spacing)} steps; "
                         f"the run has {max_steps}")
    return sorted(steps)


def min_kept_steps(k: int, spacing: str = "linear") -> int:
    """The fewest steps a run needs for ``k`` distinct checkpoints under ``spacing`` (:func:`kept_steps`)."""
    if k <= 0:
        return 0
    if spacing == "linear":
        return k
    n = k
    while len({round(n * 2.0 ** (i - k)) for i in range(1, k + 1)} - {0}) < k:
        n += 1
    return n
