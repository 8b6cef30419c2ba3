"""Units, FLOPs and the frozen base model every settings section uses."""

from __future__ import annotations


from pydantic import BaseModel, ConfigDict



__all__ = ["BUDGET_UNITS", "COPY_MIN_HEAD", "COPY_MIN_LAYERS", "FLOPS_PER_PARAM_TOKEN", "model_flops", "training_flops"]


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
