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
from toolscale.config import ExperimentConfig

__all__ = ["diversity_only_law", "baseline_quality_runs"]

_CACHE: dict[tuple, tuple[Surface | None, str]] = {}


def baseline_quality_runs(runs: Sequence[Any], config: ExperimentConfig) -> list[Any]:
    """Runs whose every quality axis sits at its baseline level (within 1e-9 relative)."""
    base = {a.name: a.baseline_level for a in config.axes if a.kind == "quality"}
    return [r for r in runs if all(abs(float(r.recipe.get(k, np.nan)) - v) <= 1e-9 * max(1.0, abs(v))
                                   for k, v in base.items())]


def diversity_only_law(runs: Sequence[Any], config: ExperimentConfig, *, benchmark: str, metric: str,
                       tokens: float, target: str = "score", law_name: str = "chinchilla") -> tuple[Surface | None, str]:
    """``(surface, method)``: the diversity-only law as a score surface, and how it was fitted.

    ``runs`` are the experiment's done, fitted (not held-out) runs. A score is fitted with
    ``saturating`` over N and the diversity axes; a loss (``target="loss"``: nats per token,
    bits per byte) with the allocator's own loss form ``law_name`` restricted to N, D and the
    diversity axes, and negated (lower loss, higher score). Returns ``(None, why)`` when no
    such law can be fitted (no diversity axis, too few runs); the caller then falls back to
    the quality-pinned comparison.
    """
    from fit.data import law_for_runs, points_from_runs
    from fit.errors import FitError
    from fit.fitting import fit_law

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
