"""The fair diversity-only baseline: what a user who varies only tools, tasks and databases would plan.

A SynthAPI-style user fits a law over model size and the diversity axes alone and
leaves supervision as the pipeline delivers it. :func:`diversity_only_law` fits that
law (``saturating`` over ``N`` and every diversity axis for a score; the allocator's own
loss form over ``N``, ``D`` and the diversity axes for a loss) on the experiment's fitted
runs:

- on the runs at baseline quality (every quality axis at its baseline level), when
  there are at least ``n_params + 2`` of them;
- otherwise on every fitted run, quality marginalised as the design delivers it (the
  quality variation becomes noise around the diversity law), and the method says so.

Held-out runs are never used. The solver then plans with this law at the same budget,
quality at baseline, and scores the resulting plan with the allocator's own law, so the
gain compares two plans under one law and is no longer >= 0 by construction across draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from allocator.solver import Surface
from fit import MIN_RUNG_RUNS
from toolscale.config import ExperimentConfig
from grid.models import RunRecord

__all__ = ["diversity_only_law", "baseline_quality_runs", "best_observed"]

_CACHE: dict[tuple, tuple[Surface | None, str]] = {}


def baseline_quality_runs(runs: Sequence[RunRecord], config: ExperimentConfig) -> list[RunRecord]:
    """Runs whose every quality axis sits at its baseline level (within 1e-9 relative)."""
    base = {a.name: a.baseline_level for a in config.axes if a.kind == "quality"}
    return [r for r in runs if all(abs(float(r.recipe.get(k, np.nan)) - v) <= 1e-9 * max(1.0, abs(v))
                                   for k, v in base.items())]


def diversity_only_law(runs: Sequence[RunRecord], config: ExperimentConfig, *, benchmark: str, metric: str,
                       tokens: float, target: str = "score", law_name: str = "chinchilla") -> tuple[Surface | None, str]:
    """``(surface, method)``: the diversity-only law as a score surface, and how it was fitted.

    ``runs`` are the experiment's done, fitted (not held-out) runs. A score is fitted with
    ``saturating`` over N and the diversity axes; a loss (``target="loss"``: nats per token,
    bits per byte) with the allocator's own loss form ``law_name`` restricted to N, D and the
    diversity axes, and negated (lower loss, higher score). Returns ``(None, why)`` when no
    such law can be fitted (no diversity axis, too few runs); the caller then falls back to
    the quality-pinned comparison.
    """
    from fit import law_for_runs, points_from_runs
    from fit import FitError
    from fit import fit_law

    key_name = f"{benchmark}/{metric}"
    runs = [r for r in runs if r.metrics.get(key_name) is not None]
    div = [a.name for a in config.axes if a.kind == "diversity"]
    if not div:
        return None, "no diversity axis: the baseline is the same law with quality pinned at baseline"
    is_loss = target == "loss"
    name = law_name if is_loss else "saturating"
    cache_key = (benchmark, metric, name, tuple(sorted((r.run_id, r.metrics[key_name]) for r in runs)), tokens)
    if cache_key in _CACHE:
        return _CACHE[cache_key]
    try:
        law = law_for_runs(name, runs, config, axes=div)
        need = law.n_params + 2
        at_base = baseline_quality_runs(runs, config)
        if len(at_base) >= need:
            chosen = at_base
            how = f"fitted on the {len(at_base)} runs at baseline quality"
        else:
            chosen = list(runs)
            how = (f"fitted on all {len(runs)} fitted runs, quality marginalised as the design delivers it "
                   f"(only {len(at_base)} runs at baseline quality; the law needs {need})")
        points = points_from_runs(chosen, benchmark=benchmark, metric=metric, inputs=law.axes)
        fit = fit_law(points, law, n_starts=2, max_grid=512, n_bootstrap=0, maxiter=300)
    except FitError as err:
        out: tuple[Surface | None, str] = (None, f"no diversity-only law ({err}); the baseline is the same law "
                                                 "with quality pinned at baseline")
        _CACHE[cache_key] = out
        return out
    params = dict(fit.params)

    sign = -1.0 if is_loss else 1.0

    def score(levels, n_params: float) -> np.ndarray:
        X = {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in levels.items()}
        m = len(next(iter(X.values())))
        X.setdefault("N", np.full(m, float(n_params)))
        X.setdefault("D", np.full(m, float(tokens)))
        return sign * np.asarray(law.predict(params, X), dtype=float).ravel()

    over = "N, D" if is_loss else "N"
    method = (f"diversity-only law ({name} over {over} and {', '.join(div)}), {how}; solved for the same budget "
              f"with quality at baseline" + ("" if fit.converged else "; its fit did not fully converge"))
    out = (Surface(score=score, own=method), method)
    _CACHE[cache_key] = out
    return out


def _rung_cell(scored: Sequence[Any]) -> list[Any]:
    """The runs of the largest rung's decision cell (:func:`best_observed`); ``scored`` is not empty."""
    by_n: dict[float, list[Any]] = {}
    for r in scored:
        by_n.setdefault(float(r.model_params), []).append(r)
    rungs = [n for n, rs in by_n.items() if len(rs) >= MIN_RUNG_RUNS]
    at_top = by_n[max(rungs or by_n)]
    cells: dict[float, list[Any]] = {}
    for r in at_top:
        cells.setdefault(float(r.train_flops or 0.0), []).append(r)
    full = [c for c, rs in cells.items() if len(rs) >= MIN_RUNG_RUNS]
    return cells[max(full)] if full else max(cells.values(), key=lambda rs: (len(rs), float(rs[0].train_flops or 0)))


def best_observed(runs: Sequence[RunRecord], config: ExperimentConfig, *, key: str, lower_is_better: bool,
                  cost: Any, budget: float, model_params: float,
                  values: dict[str, float] | None = None) -> tuple[dict[str, float], str] | None:
    """``(levels, source)``: the best recipe observed at the largest fitted rung whose cost fits ``budget``.

    DataDecide's single-scale baseline (Magnusson et al. 2025): rank the recipes by what they scored at the
    largest model trained before the decision, and take the best. ``runs`` are the experiment's done, fitted
    runs; the rung is the largest N with at least :data:`fit.MIN_RUNG_RUNS` of them (a lone verification or
    proposed run at a larger size ranks nothing), and its cell with the most training FLOPs per run among
    those with that many runs (else its cell with the most runs); a recipe's value is the mean over its seeds there of ``values[run_id]`` (the fit's own target, e.g.
    the early-stopped envelope) or the stored metric ``key``. Recipes whose cost (``cost.total`` at
    ``model_params``) exceeds the budget, or that lack one of the config's axes (runs imported without it), are
    not candidates. None when no observed recipe fits.
    """
    import json

    def recipe_key(recipe: dict[str, float]) -> str:
        return json.dumps({k: float(v) for k, v in sorted(recipe.items())})

    def value(r: Any) -> float | None:
        v = values.get(r.run_id) if values is not None else (r.metrics or {}).get(key)
        return None if v is None or not np.isfinite(float(v)) else float(v)

    scored = [r for r in runs if r.split == "fit" and value(r) is not None and r.model_params]
    if not scored:
        return None
    cell = _rung_cell(scored)
    by: dict[str, list[Any]] = {}
    for r in cell:
        by.setdefault(recipe_key(r.recipe), []).append(r)
    names = [a.name for a in config.axes]
    cands = []
    for group in by.values():
        levels = {k: float(group[0].recipe[k]) for k in names if k in group[0].recipe}
        if len(levels) < len(names):  # imported runs without one of the config's axes: their cost is unknown
            continue
        if cost.total(levels, model_params) > budget * (1 + 1e-9):
            continue
        cands.append((float(np.mean([value(r) for r in group])), levels, len(group)))
    if not cands:
        return None
    sign = 1.0 if lower_is_better else -1.0
    v, levels, n = min(cands, key=lambda t: sign * t[0])
    rung = cell[0].model_size
    return levels, (f"the best of {len(cands)} recipes within budget observed at {rung} (the largest fitted rung): "
                    f"{key} {v:.4g}, mean of {n} seed(s)")
