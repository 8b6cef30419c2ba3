"""The learning-rate scan's pure core: score a scan run, pick each rung's best rate, carry it by a rule.

A scan trains a few rungs (widths) at each of ``lr_scan.learning_rates`` on one dataset (the design's
center point) for ``lr_scan.tokens_per_param`` x N tokens, with the same schedule, weight decay and kept
checkpoints as the experiment's runs. Each completed run is scored on the **validation** benchmark
(``[eval] validation``, items no test benchmark holds): its best checkpoint's bits per byte, the
early-stopped value the experiment fits (``ScanRun.valid_bpb``). Never by training loss: at equal
training loss two rates can differ by a third in held-out bits per byte (``ScanRun.loss`` is kept only
for the record). Runs whose loss diverged (NaN) are failed with their log tail and left out of the choice.

Each scanned rung's best rate is the vertex of a parabola through the best grid rate and its two
neighbours in ``(log lr, valid_bpb)`` (:func:`best_rates`), so two rates that tie on the grid give the
rate between them rather than whichever the noise favours; at the grid's edge the edge rate is taken
and flagged. The best rates then set every rung of the ladder by a documented rule (:func:`carry_rates`):

* ``power``: ``lr(h) = lr_a (h / h_a)^(-k)``, with ``ln lr`` fitted by least squares on ``ln h`` over
  every scanned width (two widths: the line through them), ``k`` clipped to [0, 2] (with one scanned width,
  ``k = 1``); three scanned widths let one noisy rung move the exponent less;
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
    """Mean training loss over the last 10% of logged steps, nats/token (for the record; never the choice)."""
    valid_bpb: float | None = None
    """The scan score: the best kept checkpoint's bits per byte on the validation benchmark (None when failed)."""
    valid_step: int | None = None
    """The step of that checkpoint."""
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
    """Best rate per scanned rung (the parabola's vertex in log rate, or the grid edge)."""
    validation: str = ""
    """The benchmark that chose (``[eval] validation``)."""
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


def _vertex(lrs: Sequence[float], scores: Sequence[float]) -> float:
    """The minimum of the parabola through three ``(log lr, score)`` points, kept between the outer two."""
    x = [math.log(v) for v in lrs]
    y = list(scores)
    den = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
    a = (x[2] * (y[1] - y[0]) + x[1] * (y[0] - y[2]) + x[0] * (y[2] - y[1])) / den
    b = (x[2] ** 2 * (y[0] - y[1]) + x[1] ** 2 * (y[2] - y[0]) + x[0] ** 2 * (y[1] - y[2])) / den
    if not a > 0:  # no curvature: the best grid point
        return lrs[1]
    return math.exp(min(max(-b / (2 * a), x[0]), x[2]))


def best_rates(runs: Sequence[ScanRun]) -> tuple[dict[str, float], list[str]]:
    """Best rate per rung by validation bits per byte among completed runs, and the rungs whose best is at the
    grid's edge. Inside the grid, the vertex of the parabola through the best rate and its neighbours (module
    docstring).

    Raises ``ValueError`` naming a rung none of whose runs completed with a validation score.
    """
    by_rung: dict[str, list[ScanRun]] = {}
    for r in runs:
        by_rung.setdefault(r.rung, []).append(r)
    best, edge = {}, []
    for rung, group in by_rung.items():
        done = sorted((r for r in group if r.status == "done" and r.valid_bpb is not None and math.isfinite(r.valid_bpb)),
                      key=lambda r: r.learning_rate)
        if not done:
            raise ValueError(f"every learning rate of rung {rung!r} failed; first error: {group[0].error}")
        i = min(range(len(done)), key=lambda j: (done[j].valid_bpb, done[j].learning_rate))
        tried = sorted(r.learning_rate for r in group)
        if 0 < i < len(done) - 1:
            trio = done[i - 1:i + 2]
            best[rung] = _vertex([r.learning_rate for r in trio], [r.valid_bpb for r in trio])  # type: ignore[misc]
        else:
            best[rung] = done[i].learning_rate
        if len(tried) > 1 and done[i].learning_rate in (tried[0], tried[-1]):
            edge.append(rung)
    return best, edge


def carry_rates(best: dict[str, float], widths: dict[str, int], rule: str = "power") -> tuple[float, str, dict[str, float]]:
    """``(k, anchor rung, {rung: lr})``: every rung's rate from the scanned rungs' best by ``rule``.

    ``best`` holds the scanned rungs' rates, ``widths`` every proxy rung's hidden size (scanned included).
    ``power`` fits ``ln lr = c - k ln h`` by least squares over the scanned widths and sets every rung, the
    scanned ones included, from the line (``k`` clipped to [0, 2]); the anchor is the smallest scanned width.
    """
    if not best:
        raise ValueError("no scanned rung has a best learning rate")
    if rule not in ("power", "inverse_width"):
        raise ValueError(f"unknown learning-rate rule {rule!r}; known: power, inverse_width")
    scanned = sorted(best, key=lambda r: widths[r])
    a = scanned[0]
    xs = [math.log(widths[r]) for r in scanned]
    ys = [math.log(best[r]) for r in scanned]
    k = 1.0
    if rule == "power" and len(set(xs)) > 1:
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        k = min(max(0.0, -slope), MAX_EXPONENT)  # 0.0 first: equal rates give k = 0.0, not -0.0
        lr_a = math.exp(my + k * mx - k * math.log(widths[a]))  # the fitted line at h_a
    else:
        lr_a = best[a]
    rates = {r: lr_a * (w / widths[a]) ** (-k) for r, w in widths.items()}
    return k, a, rates
