"""Small-to-large decision accuracy (DataDecide, Magnusson et al. 2025): do the fitted sizes rank recipes as
the held-out size does?

For every pair of recipes (data points of the design) that both ran at the held-out size, the decision is
"which of the two is better". It is *right* when the order at the small scale matches the order of the
observed held-out values; a tie at either scale counts one half. Two small-scale orders are reported:

* ``observed``: each recipe's observed value in the largest fitted cell it ran in (the largest fitted
  FLOPs, i.e. the widest fitted rung at its most tokens): DataDecide's single-scale prediction;
* ``law``: the fitted law's prediction at the held-out size (parameters fitted without the held-out runs).

Accuracy ``= (right + ties / 2) / pairs``. Its interval is a percentile bootstrap over recipes: draw the
recipes with replacement, score every pair of distinct draws, ``B`` times (seeded). Per axis, the same over
the pairs whose recipes differ on that axis (the decisions that axis is part of).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fit.models import AxisDecision, DecisionAccuracy

__all__ = ["AxisDecision", "DecisionAccuracy", "decision_accuracy", "decisions_for_fit", "pairwise_accuracy",
           "recipe_key", "small_scale_values", "LOSS_METRICS"]

LOSS_METRICS = ("loss", "bpb")
"""Metrics where lower is better (eval's ``loss`` in nats/token and ``bpb`` in bits/byte)."""


def recipe_key(recipe: Mapping[str, float]) -> str:
    """A recipe's identity across cells: its axis levels as sorted JSON (seeds are averaged over)."""
    return json.dumps({k: float(v) for k, v in sorted(recipe.items())}, sort_keys=True)


def _agree(a: float, b: float) -> float:
    """1 when two differences have the same sign, 0 when opposite, 1/2 when either is zero."""
    if a == 0 or b == 0:
        return 0.5
    return 1.0 if (a > 0) == (b > 0) else 0.0


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


def small_scale_values(runs: Sequence[Any], key: str) -> tuple[dict[str, float], dict[str, float], str]:
    """``(held-out value by recipe, small-scale value by recipe, cell label)`` from registry runs.

    ``key`` is ``"benchmark/metric"``. Held-out values average a recipe's held-out runs; the small-scale
    value averages its runs in the largest fitted cell (by planned FLOPs per run) that holds it.
    """
    held: dict[str, list[float]] = {}
    cells: dict[str, dict[tuple[str, float], list[tuple[float, float]]]] = {}
    for r in runs:
        v = (r.metrics or {}).get(key)
        if v is None or not math.isfinite(float(v)):
            continue
        k = recipe_key(r.recipe)
        if r.split == "heldout":
            held.setdefault(k, []).append(float(v))
        elif r.split == "fit":
            mult = float((r.metadata or {}).get("tokens_per_param", (r.metadata or {}).get("token_multiplier", 1.0)))
            cells.setdefault(k, {}).setdefault((r.model_size, mult), []).append((float(r.train_flops or 0.0), float(v)))
    small, labels = {}, set()
    for k, by_cell in cells.items():
        if k not in held:
            continue
        cell = max(by_cell, key=lambda c: max(f for f, _ in by_cell[c]))
        small[k] = float(np.mean([v for _, v in by_cell[cell]]))
        labels.add(f"{cell[0]} x {cell[1]:g}")
    return ({k: float(np.mean(v)) for k, v in held.items()}, small, ", ".join(sorted(labels)) or "none")


def decision_accuracy(large: Mapping[str, float], small: Mapping[str, float], *, source: str, small_scale: str,
                      higher_is_better: bool, n_bootstrap: int = 1000, level: float = 0.90,
                      seed: int = 0) -> DecisionAccuracy:
    """Decision accuracy of ``small`` against ``large`` (both ``{recipe_key: value}``), with per-axis parts.

    Only recipes in both maps count. The interval is the percentile bootstrap over recipes (module
    docstring); an axis's pairs are those whose levels of it differ.
    """
    keys = sorted(set(large) & set(small))
    s = [small[k] for k in keys]
    g = [large[k] for k in keys]
    levels = [json.loads(k) for k in keys]
    axes = sorted({a for lv in levels for a in lv})
    acc, pairs = pairwise_accuracy(s, g)
    rng = np.random.default_rng(seed)
    n = len(keys)
    draws = [rng.integers(0, n, size=n) for _ in range(n_bootstrap)] if n >= 2 else []

    def interval(mask: np.ndarray | None) -> tuple[float | None, float | None]:
        vals = []
        for idx in draws:
            total, m = 0.0, 0
            for a in range(n):
                for b in range(a + 1, n):
                    i, j = idx[a], idx[b]
                    if i == j or (mask is not None and not mask[i, j]):
                        continue
                    total += _agree(s[i] - s[j], g[i] - g[j])
                    m += 1
            if m:
                vals.append(total / m)
        if not vals:
            return None, None
        tail = (1 - level) / 2 * 100
        return float(np.percentile(vals, tail)), float(np.percentile(vals, 100 - tail))

    lo, hi = interval(None)
    per_axis = {}
    for ax in axes:
        mask = np.array([[levels[i].get(ax) != levels[j].get(ax) for j in range(n)] for i in range(n)], bool)
        a_acc, a_pairs = pairwise_accuracy(s, g, mask)
        a_lo, a_hi = interval(mask) if a_pairs else (None, None)
        per_axis[ax] = AxisDecision(accuracy=a_acc, lo=a_lo, hi=a_hi, pairs=a_pairs)
    return DecisionAccuracy(source=source, accuracy=acc, lo=lo, hi=hi, level=level, pairs=pairs, recipes=n,
                            higher_is_better=higher_is_better, small_scale=small_scale, per_axis=per_axis,
                            n_bootstrap=len(draws))


def decisions_for_fit(runs: Sequence[Any], fit: Any, *, higher_is_better: bool, n_bootstrap: int = 1000,
                      seed: int = 0) -> tuple[DecisionAccuracy | None, DecisionAccuracy | None]:
    """``(observed, law)`` decision accuracies of a stored fit over its experiment's done runs.

    ``observed`` compares the largest fitted cell with the held-out values (:func:`small_scale_values`);
    ``law`` compares the fit's held-out predictions (``fit.heldout.points``) with the same values. Either is
    None when fewer than two recipes ran at the held-out size.
    """
    key = f"{fit.benchmark}/{fit.metric}"
    large, small, label = small_scale_values(runs, key)
    if len(large) < 2:
        return None, None
    observed = decision_accuracy(large, small, source="observed", small_scale=f"largest fitted cell: {label}",
                                 higher_is_better=higher_is_better, n_bootstrap=n_bootstrap, seed=seed)
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
                                higher_is_better=higher_is_better, n_bootstrap=n_bootstrap, seed=seed)
    return observed, law
