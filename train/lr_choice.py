"""The learning-rate scan's pure core: score a scan run, pick each rung's best rate, carry it by a rule.

A scan trains a few rungs (widths) at each of ``lr_scan.learning_rates`` on one dataset (the design's
center point) for ``lr_scan.tokens_per_param`` x N tokens, with the same cosine schedule as the
experiment's runs. Each completed run is scored by :func:`scan_loss`; runs whose loss diverged (NaN)
are failed with their log tail and left out of the choice. The best rate per scanned rung then sets
every rung of the ladder by a documented rule (:func:`carry_rates`):

* ``power``: ``lr(h) = lr_a (h / h_a)^(-k)``, ``k = ln(lr_a / lr_b) / ln(h_b / h_a)`` from the
  smallest and the largest scanned widths ``h_a < h_b``, clipped to [0, 2] (with one scanned width,
  ``k = 1``);
* ``inverse_width``: ``k = 1``, the rule muP gives for Adam's hidden-layer rate (Yang et al. 2022).

The orchestration (datasets, tokenizer, training processes) is in :mod:`pipeline.lr_scan`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ScanRun", "ScanResult", "scan_loss", "best_rates", "carry_rates", "MAX_EXPONENT"]

MAX_EXPONENT = 2.0
"""Largest width exponent the ``power`` rule accepts (it is clipped to [0, MAX_EXPONENT])."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ScanRun(_Frozen):
    """One run of a learning-rate scan."""

    rung: str
    """Ladder rung trained."""
    width: int
    """Its hidden size, in units."""
    learning_rate: float
    """Peak learning rate tried."""
    steps: int
    """Optimizer steps (cosine decay to the last one)."""
    status: Literal["done", "failed"]
    """``failed`` when training raised (a diverged, NaN loss among them)."""
    loss: float | None = None
    """Scan score: mean training loss over the last 10% of logged steps, nats/token (None when failed)."""
    error: str | None = None
    """Why it failed: the step and the log's last losses for a divergence, else the error's tail."""
    wall_s: float | None = None
    """Training wall time, seconds."""


class ScanResult(_Frozen):
    """What ``toolscale lr-scan`` writes (``<executor.folder>/lr_scan.json``) and ``grid design`` reads."""

    experiment: str
    """Experiment name."""
    rule: Literal["power", "inverse_width"]
    """The carrying rule (module docstring)."""
    exponent: float
    """Width exponent k of ``lr(h) = lr_a (h / h_a)^-k``."""
    anchor_rung: str
    """Rung a: the smallest scanned width."""
    anchor_width: int
    """Its hidden size h_a."""
    anchor_lr: float
    """Its best rate lr_a."""
    best: dict[str, float]
    """Best rate per scanned rung."""
    at_grid_edge: list[str]
    """Scanned rungs whose best rate is the smallest or largest tried (the grid may be too narrow)."""
    learning_rates: dict[str, float]
    """The rate the rule gives every proxy rung of the ladder (what the design records per run)."""
    runs: list[ScanRun]
    """Every scan run, failed ones included."""


def scan_loss(curve: Sequence[dict], tail: float = 0.1) -> float:
    """Mean logged training loss over the last ``tail`` share of steps (at least one point), nats/token.

    ``curve`` is ``train_stats.json``'s ``loss_curve`` (``[{"step", "loss"}]``). With cosine decay to
    the run's end this is the end-of-training loss, smoothed over batches.
    """
    points = [(int(p["step"]), float(p["loss"])) for p in curve if "loss" in p]
    if not points:
        raise ValueError("the loss curve is empty")
    last = max(s for s, _ in points)
    keep = [loss for s, loss in points if s >= last * (1 - tail)] or [points[-1][1]]
    return sum(keep) / len(keep)


def best_rates(runs: Sequence[ScanRun]) -> tuple[dict[str, float], list[str]]:
    """Best (lowest scan loss) rate per rung among completed runs, and the rungs whose best is at the edge.

    Raises ``ValueError`` naming a rung none of whose runs completed.
    """
    by_rung: dict[str, list[ScanRun]] = {}
    for r in runs:
        by_rung.setdefault(r.rung, []).append(r)
    best, edge = {}, []
    for rung, group in by_rung.items():
        done = [r for r in group if r.status == "done" and r.loss is not None and math.isfinite(r.loss)]
        if not done:
            raise ValueError(f"every learning rate of rung {rung!r} failed; first error: {group[0].error}")
        choice = min(done, key=lambda r: (r.loss, r.learning_rate))
        best[rung] = choice.learning_rate
        tried = sorted(r.learning_rate for r in group)
        if len(tried) > 1 and choice.learning_rate in (tried[0], tried[-1]):
            edge.append(rung)
    return best, edge


def carry_rates(best: dict[str, float], widths: dict[str, int], rule: str = "power") -> tuple[float, str, dict[str, float]]:
    """``(k, anchor rung, {rung: lr})``: every rung's rate from the scanned rungs' best by ``rule``.

    ``best`` holds the scanned rungs' rates, ``widths`` every proxy rung's hidden size (scanned included).
    """
    if not best:
        raise ValueError("no scanned rung has a best learning rate")
    if rule not in ("power", "inverse_width"):
        raise ValueError(f"unknown learning-rate rule {rule!r}; known: power, inverse_width")
    scanned = sorted(best, key=lambda r: widths[r])
    a, b = scanned[0], scanned[-1]
    k = 1.0
    if rule == "power" and widths[b] > widths[a]:
        k = math.log(best[a] / best[b]) / math.log(widths[b] / widths[a])
        k = min(max(k, 0.0), MAX_EXPONENT)
    rates = {r: best[a] * (w / widths[a]) ** (-k) for r, w in widths.items()}
    return k, a, rates
