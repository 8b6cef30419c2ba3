"""How one run's training budget splits between its stages (pure arithmetic, no training here).

A run of the design has planned steps ``S`` (its token multiple) at batch ``b``. Seed 001's claim is tested
at **equal total FLOPs**: at fixed N, ``C = 6 N D`` makes that equal total tokens, so the tokens spent on
mid-training come out of SFT's:

* planned tokens ``D = S * b * t_sft`` with ``t_sft`` the mean tokens of an SFT sequence;
* mid-training tokens ``M`` (the ``midtrain_tokens`` axis, 0 for the SFT-only arm, or one pass over the corpus), capped so that SFT
  keeps at least one step: ``M <= D - b * t_sft``;
* mid-training steps ``ceil(M / (b * t_doc))`` with ``t_doc`` the mean tokens of a corpus document;
* SFT steps ``max(1, round((D - M) / (b * t_sft)))``.

GRPO is not planned here: it runs after SFT for its own steps (``[train].grpo_steps`` or the ``grpo_steps``
axis); its FLOPs are recorded as a separate stage and count in the run's total (an RL run is a different
objective, fitted separately, not an equal-FLOPs arm).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["StagePlan", "plan_stages"]


@dataclass(frozen=True)
class StagePlan:
    """Optimizer steps per stage of one run (0: the stage does not run)."""

    midtrain_steps: int
    sft_steps: int
    midtrain_tokens: float
    """Planned mid-training tokens ``M``."""
    planned_tokens: float
    """The run's planned mid-training + SFT tokens ``D``."""


def plan_stages(stages: list[str], *, total_steps: int, batch_size: int, sft_tokens: float, doc_tokens: float = 0.0,
                corpus_tokens: float = 0.0, midtrain_tokens: float | None = None) -> StagePlan:
    """Steps per stage at equal total tokens (see the module docstring).

    Parameters
    ----------
    stages
        The run's stages (``midtrain``, ``sft``, ``grpo``), in order; only ``midtrain`` changes the split.
    total_steps, batch_size
        The design's planned steps and the rung's batch size, in sequences.
    sft_tokens, doc_tokens
        Mean tokens per SFT sequence and per corpus document (after truncation), in tokens.
    corpus_tokens
        Tokens of one pass over the corpus (the default ``M`` when ``midtrain_tokens`` is None).
    midtrain_tokens
        ``M``, from the design's ``midtrain_tokens`` axis (0: no mid-training, the SFT-only arm); None means
        one pass over the corpus.

    Examples
    --------
    >>> p = plan_stages(["midtrain", "sft"], total_steps=100, batch_size=4, sft_tokens=200, doc_tokens=100,
    ...                 midtrain_tokens=20_000)
    >>> (p.midtrain_steps, p.sft_steps)
    (50, 75)
    """
    if total_steps < 1 or batch_size < 1 or not sft_tokens > 0:
        raise ValueError(f"need total_steps, batch_size >= 1 and sft_tokens > 0, got {total_steps}, {batch_size}, "
                         f"{sft_tokens}")
    planned = float(total_steps * batch_size * sft_tokens)
    if "midtrain" not in stages:
        return StagePlan(0, total_steps, 0.0, planned)
    if not doc_tokens > 0:
        raise ValueError(f"mid-training needs documents with tokens, got a mean of {doc_tokens}")
    m = float(corpus_tokens) if midtrain_tokens is None else float(midtrain_tokens)
    m = min(m, planned - batch_size * sft_tokens)
    if m <= 0:
        return StagePlan(0, total_steps, 0.0, planned)
    mid_steps = math.ceil(m / (batch_size * doc_tokens))
    sft_steps = max(1, round((planned - m) / (batch_size * sft_tokens)))
    return StagePlan(mid_steps, sft_steps, m, planned)
