"""Probe FLOP accounting against the target training run.

Standard transformer estimates (Kaplan et al. 2020, arXiv:2001.08361, sec. 2.1):
a forward pass costs about ``2 N`` FLOPs per token and a training step (forward and
backward) about ``6 N`` per token, with N the parameter count. Attention's
context-length term is ignored, as in the Chinchilla accounting.
"""

from __future__ import annotations

import math

from probes.models import ProbeCost
from toolscale.config import training_flops
from toolscale.errors import UsageError

__all__ = ["probe_cost", "scoring_flops"]


def scoring_flops(params: float, tokens: float) -> float:
    """Forward-only FLOPs ``2 N D`` for N parameters and D tokens."""
    return 2.0 * params * tokens


def probe_cost(*, params: float, train_tokens: float, score_tokens: float, target_train_flops: float | None,
               budget_share: float = 0.05, data_tokens: float = 0.0, target: str | None = None) -> ProbeCost:
    r"""The probe's FLOPs and their share of the target training run.

    Parameters
    ----------
    params : float
        Probe parameters N.
    train_tokens : float
        Non-padding tokens the probe trained on.
    score_tokens : float
        Non-padding tokens of every scoring forward pass (full, masked and control variants).
    target_train_flops : float or None
        FLOPs of the run whose data is probed; None leaves the share unknown.
    budget_share : float
        Allowed share (default 5 %, the research plan's budget).
    data_tokens : float
        Tokens of the probed dataset (recorded, not used in the share).
    target : str, optional
        What the target FLOPs are (recorded).

    Notes
    -----
    .. math:: \mathrm{share} = \frac{6 N D_\mathrm{train} + 2 N D_\mathrm{score}}{C_\mathrm{target}}

    Examples
    --------
    >>> probe_cost(params=1e6, train_tokens=1e5, score_tokens=5e5, target_train_flops=1e14).share
    0.016
    """
    for name, v in (("params", params), ("train_tokens", train_tokens), ("score_tokens", score_tokens)):
        if not math.isfinite(v) or v < 0:
            raise UsageError(f"probe cost: {name} must be a finite number >= 0, got {v}")
    if target_train_flops is not None and (not math.isfinite(target_train_flops) or target_train_flops <= 0):
        raise UsageError(f"target_train_flops must be a positive number of FLOPs, got {target_train_flops}")
    tf, sf = training_flops(params, train_tokens), scoring_flops(params, score_tokens)
    total = tf + sf
    if target_train_flops is not None:
        share: float | None = total / target_train_flops
    else:
        share = 0.0 if total == 0 else None  # nothing spent is no share of any run
    return ProbeCost(params=params, train_tokens=train_tokens, train_flops=tf, score_tokens=score_tokens,
                     score_flops=sf, data_tokens=data_tokens, total_flops=total,
                     target_train_flops=target_train_flops, share=share, budget_share=budget_share, target=target,
                     within_budget=None if share is None else share <= budget_share)
