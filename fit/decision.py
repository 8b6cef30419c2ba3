"""Small-to-large decision accuracy (DataDecide, Magnusson et al. 2025): do the fitted sizes rank recipes as
the held-out size does?

For every pair of recipes (data points of the design) that both ran at the held-out size, the decision is
"which of the two is better". It is *right* when the order at the small scale matches the order of the
observed held-out values (each recipe's mean over its seeds); a tie at either scale counts one half. Two
small-scale orders are reported:

* ``observed``: each recipe's observed value in the largest fitted cell it ran in (the largest fitted
  FLOPs, i.e. the widest fitted rung at its most tokens): DataDecide's single-scale prediction;
* ``law``: the fitted law's prediction at the held-out size (parameters fitted without the held-out runs).

Accuracy ``= (right + ties / 2) / pairs``, with a Wilson score interval (Wilson 1927) over the pairs: it
does not collapse to ``[1, 1]`` on a perfect score, as a percentile bootstrap does. Pairs share recipes, so
they are not independent and the interval is, if anything, too narrow.

Most pairs of a factorial design differ by far more than seed noise and are easy. The informative
decisions are the **close pairs**: those whose observed difference at the fitted size is within
``close_sds`` (2) seed SDs, the SD of one run across seeds there (pooled over the recipes that ran two or
more seeds in that cell). Accuracy is also reported over them, and per axis over the pairs that differ on
that axis, and against compute: each fitted rung's own order (at its largest tokens per parameter)
against the held-out order, smallest rung first (DataDecide's accuracy-against-compute curve).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fit.models import AxisDecision, DecisionAccuracy, DecisionPoint
from grid.models import RunRecord

__all__ = ["AxisDecision", "DecisionAccuracy", "DecisionPoint", "decision_accuracy", "decisions_for_fit",
           "pairwise_accuracy", "recipe_key", "small_scale_values", "pooled_seed_sd", "wilson", "compute_curve",
           "LOSS_METRICS"]

LOSS_METRICS = ("loss", "bpb")
"""Metrics where lower is better (eval's ``loss`` in nats/token and ``bpb`` in bits/byte)."""

CLOSE_SDS = 2.0
"""A pair is close when its difference at the fitted size is within this many seed SDs."""


def recipe_key(recipe: Mapping[str, float]) -> str:
    """A recipe's identity across cells: its axis levels as sorted JSON (seeds are averaged over)."""
    return json.dumps({k: float(v) for k, v in sorted(recipe.items())}, sort_keys=True)


def _agree(a: float, b: float) -> float:
    """1 when two differences have the same sign, 0 when opposite, 1/2 when either is zero."""
    if a == 0 or b == 0:
        return 0.5
    return 1.0 if (a > 0) == (b > 0) else 0.0


def wilson(successes: float, n: int, level: float = 0.90) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion ``successes / n`` at ``level`` (``(None, None)`` for ``n = 0``).

    ``center = (p + z^2 / 2n) / (1 + z^2 / n)``, ``half = z / (1 + z^2 / n) sqrt(p (1 - p) / n + z^2 / 4n^2)``
    with ``z`` the standard normal quantile at ``(1 + level) / 2``; ``successes`` may be fractional (ties).
    """
    if n <= 0:
        return None, None
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    den = 1 + z * z / n
    center = (p + z * z / (2 * n)) / den
    half = z / den * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n)))
    return max(0.0, center - half), min(1.0, center + half)


def pairwise_accuracy(small: Sequence[float], large: Sequence[float],
                      mask: np.ndarray | None = None) -> tuple[float | None, int]:
    """``(accuracy, pairs)`` over the pairs i < j (where ``mask[i, j]``) of two aligned value lists."""
    s, g = np.asarray(small, float), np.asarray(large, float)
    total, n = 0.0, 0
    for i in range(len(s)):
        for j in range(i + 1, len(s)):
            if mask is not None and not mask[i, j]:
                continue
            total += _agree(s[i] - s[j], g[i] - g[j])
            n += 1
    return (total / n if n else None), n


def pooled_seed_sd(values: Mapping[str, Sequence[float]]) -> float | None:
    """SD of one run across seeds, pooled over the recipes with 2+ values: ``sqrt(sum SS_r / sum (n_r - 1))``."""
    ss, df = 0.0, 0
    for v in values.values():
        a = np.asarray(v, dtype=float)
        if a.size >= 2:
            ss += float(np.sum((a - a.mean()) ** 2))
            df += a.size - 1
    return math.sqrt(ss / df) if df else None


def _size_label(label: str) -> str:
    """A rung's name as it is; a count (``70M``, ``7e+07``) in one form, so that runs from two sources that write
    the same size differently share a cell."""
    from grid import parse_count

    try:
        return f"{parse_count(label):.4g}"
    except (TypeError, ValueError):
        return label


def _cells(runs: Sequence[RunRecord], key: str, values: Mapping[str, float] | None
           ) -> tuple[dict[str, list[float]], dict[tuple[str, float], dict[str, list[float]]], dict[tuple[str, float], float]]:
    """``(held-out values by recipe, fitted cell -> recipe -> values, cell -> its largest FLOPs)``.

    A run's value is ``values[run_id]`` when given (the fit's target, e.g. the early-stopped envelope), else
    its stored metric ``key``.
    """
    held: dict[str, list[float]] = {}
    cells: dict[tuple[str, float], dict[str, list[float]]] = {}
    flops: dict[tuple[str, float], float] = {}
    for r in runs:
        v = values.get(r.run_id) if values is not None else (r.metrics or {}).get(key)
        if v is None or not math.isfinite(float(v)):
            continue
        k = recipe_key(r.recipe)
        if r.split == "heldout":
            held.setdefault(k, []).append(float(v))
        elif r.split == "fit":
            meta = r.metadata or {}
            cell = (_size_label(r.model_size), float(meta.get("tokens_per_param", meta.get("token_multiplier", 1.0))))
            cells.setdefault(cell, {}).setdefault(k, []).append(float(v))
            flops[cell] = max(flops.get(cell, 0.0), float(r.train_flops or 0.0))
    return held, cells, flops


def small_scale_values(runs: Sequence[RunRecord], key: str, values: Mapping[str, float] | None = None
                       ) -> tuple[dict[str, float], dict[str, float], str, float | None]:
    """``(held-out value by recipe, small-scale value by recipe, cell label, seed SD there)`` from registry runs.

    ``key`` is ``"benchmark/metric"`` (``values``, run id -> value, overrides the stored metric). Held-out
    values average a recipe's held-out runs; the small-scale value averages its runs in the largest fitted
    cell (by planned FLOPs per run) that holds it; the seed SD pools the recipes replicated in those cells.
    """
    held, cells, flops = _cells(runs, key, values)
    small, labels, reps = {}, set(), {}
    for k in held:
        mine = [c for c in cells if k in cells[c]]
        if not mine:
            continue
        cell = max(mine, key=lambda c: flops[c])
        small[k] = float(np.mean(cells[cell][k]))
        reps[k] = cells[cell][k]
        labels.add(f"{cell[0]} x {cell[1]:g}")
    return ({k: float(np.mean(v)) for k, v in held.items()}, small, ", ".join(sorted(labels)) or "none",
            pooled_seed_sd(reps))


def _close_mask(closeness: Sequence[float], seed_sd: float | None, sds: float) -> np.ndarray | None:
    if seed_sd is None or not seed_sd > 0:
        return None
    c = np.asarray(closeness, float)
    return np.abs(c[:, None] - c[None, :]) <= sds * seed_sd


def decision_accuracy(large: Mapping[str, float], small: Mapping[str, float], *, source: str, small_scale: str,
                      higher_is_better: bool, level: float = 0.90, seed_sd: float | None = None,
                      closeness: Mapping[str, float] | None = None, close_sds: float = CLOSE_SDS,
                      **_: Any) -> DecisionAccuracy:
    """Decision accuracy of ``small`` against ``large`` (both ``{recipe_key: value}``), with per-axis parts.

    Only recipes in both maps count. ``seed_sd`` (one run's SD across seeds at the fitted size) and
    ``closeness`` (the observed values there; default ``small``) define the close pairs. Intervals are Wilson
    intervals at ``level`` (module docstring).
    """
    keys = sorted(set(large) & set(small))
    s = [small[k] for k in keys]
    g = [large[k] for k in keys]
    levels = [json.loads(k) for k in keys]
    axes = sorted({a for lv in levels for a in lv})
    n = len(keys)
    acc, pairs = pairwise_accuracy(s, g)
    lo, hi = wilson(acc * pairs, pairs, level) if acc is not None else (None, None)
    near = closeness if closeness is not None else small
    cmask = _close_mask([near.get(k, math.nan) for k in keys], seed_sd, close_sds) if n else None
    c_acc, c_pairs = pairwise_accuracy(s, g, cmask) if cmask is not None else (None, 0)
    c_lo, c_hi = wilson(c_acc * c_pairs, c_pairs, level) if c_acc is not None else (None, None)
    per_axis = {}
    for ax in axes:
        mask = np.array([[levels[i].get(ax) != levels[j].get(ax) for j in range(n)] for i in range(n)], bool)
        a_acc, a_pairs = pairwise_accuracy(s, g, mask)
        a_lo, a_hi = wilson(a_acc * a_pairs, a_pairs, level) if a_acc is not None else (None, None)
        per_axis[ax] = AxisDecision(accuracy=a_acc, lo=a_lo, hi=a_hi, pairs=a_pairs)
    return DecisionAccuracy(source=source, accuracy=acc, lo=lo, hi=hi, level=level, pairs=pairs, recipes=n,
                            higher_is_better=higher_is_better, small_scale=small_scale, per_axis=per_axis,
                            seed_sd=seed_sd, close_sds=close_sds, close_accuracy=c_acc, close_lo=c_lo,
                            close_hi=c_hi, close_pairs=c_pairs)


def compute_curve(runs: Sequence[RunRecord], key: str, values: Mapping[str, float] | None = None, *,
                  level: float = 0.90, close_sds: float = CLOSE_SDS) -> list[DecisionPoint]:
    """Accuracy against compute: each fitted rung's largest-FLOPs cell ordered against the held-out means."""
    held, cells, flops = _cells(runs, key, values)
    large = {k: float(np.mean(v)) for k, v in held.items()}
    top: dict[str, tuple[str, float]] = {}
    for cell in cells:
        if cell[0] not in top or flops[cell] > flops[top[cell[0]]]:
            top[cell[0]] = cell
    out = []
    for rung, cell in sorted(top.items(), key=lambda t: flops[t[1]]):
        small = {k: float(np.mean(v)) for k, v in cells[cell].items() if k in large}
        if len(small) < 2:
            continue
        d = decision_accuracy(large, small, source="observed", small_scale=rung, higher_is_better=True, level=level,
                              seed_sd=pooled_seed_sd({k: cells[cell][k] for k in small}), close_sds=close_sds)
        out.append(DecisionPoint(model_size=rung, cell=f"{cell[0]} x {cell[1]:g}", flops=flops[cell],
                                 accuracy=d.accuracy, lo=d.lo, hi=d.hi, pairs=d.pairs,
                                 close_accuracy=d.close_accuracy, close_pairs=d.close_pairs))
    return out


def decisions_for_fit(runs: Sequence[RunRecord], fit: Any, *, higher_is_better: bool, values: Mapping[str, float] | None = None,
                      level: float = 0.90, **_: Any) -> tuple[DecisionAccuracy | None, DecisionAccuracy | None]:
    """``(observed, law)`` decision accuracies of a stored fit over its experiment's done runs.

    ``observed`` compares the largest fitted cell with the held-out values (:func:`small_scale_values`) and
    carries the accuracy-against-compute curve; ``law`` compares the fit's held-out predictions
    (``fit.heldout.points``) with the same values, close pairs being the observed ones. ``values`` (run id
    -> value) is the fit's target when it is not the stored metric (the envelope). Either is None when
    fewer than two recipes ran at the held-out size.
    """
    key = f"{fit.benchmark}/{fit.metric}"
    large, small, label, sd = small_scale_values(runs, key, values)
    if len(large) < 2:
        return None, None
    observed = decision_accuracy(large, small, source="observed", small_scale=f"largest fitted cell: {label}",
                                 higher_is_better=higher_is_better, level=level, seed_sd=sd)
    observed = observed.model_copy(update={"curve": compute_curve(runs, key, values, level=level)})
    law = None
    points = list(fit.heldout.points) if getattr(fit, "heldout", None) is not None else []
    if points:
        recipe_of = {r.run_id: recipe_key(r.recipe) for r in runs}
        predicted: dict[str, list[float]] = {}
        for p in points:
            if p.run_id in recipe_of:
                predicted.setdefault(recipe_of[p.run_id], []).append(float(p.predicted))
        law = decision_accuracy(large, {k: float(np.mean(v)) for k, v in predicted.items()}, source="law",
                                small_scale=f"law {fit.law} predictions at the held-out size",
                                higher_is_better=higher_is_better, level=level, seed_sd=sd, closeness=small)
    return observed, law
