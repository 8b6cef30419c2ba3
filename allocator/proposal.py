"""The pure steps of ``toolscale next``: the candidate runs, their cost book, the law's draws over them, the plans
a refit could choose, and the :class:`NextRuns` answer. The registry edge that reads the fit and the runs and
calls these is :mod:`pipeline.next_runs`; the choice itself is :func:`allocator.preposterior.select_runs`.

Cost of a run: synthesising its dataset (the allocator's cost model at the recipe's levels, quality
charged above its baseline) unless a dataset of that recipe and seed exists or is proposed earlier,
plus training compute ``[cost].per_pflop x 6 N D / 1e15`` of the run's planned N and D.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from allocator.models import COMPUTE, AllocationReport, NextRuns, ProposedRun
from allocator.preposterior import CostBook, Ensemble, Selection
from allocator.solver import Surface, solve_levels
from fit import MIN_RUNG_RUNS
from grid import CandidateCell, candidate_cells, candidate_recipes, recipe_key
from grid.models import RunRecord

__all__ = ["Space", "candidate_space", "cost_book", "ensemble_of", "rival_plans", "next_runs_report", "width_after",
           "CRITERION"]


@dataclass(frozen=True)
class Space:
    """The candidate runs: recipe x cell pairs, with their inputs and costs."""

    recipes: list[dict[str, float]]
    cells: list[CandidateCell]
    recipe_of: np.ndarray
    cell_of: np.ndarray
    data_cost: np.ndarray
    compute_cost: np.ndarray
    subsampled: bool

    @property
    def size(self) -> int:
        """Candidates C."""
        return int(self.recipe_of.size)

    def inputs(self, idx: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Law inputs of the candidates (every axis, N and D), arrays of shape (C,) or (len(idx),)."""
        idx = np.arange(self.size) if idx is None else np.asarray(idx)
        r, k = self.recipe_of[idx], self.cell_of[idx]
        out = {a: np.array([self.recipes[i][a] for i in r], dtype=float) for a in self.recipes[0]}
        out["N"] = np.array([self.cells[i].model_params for i in k], dtype=float)
        out["D"] = np.array([self.cells[i].train_tokens for i in k], dtype=float)
        return out


def candidate_space(config: Any, cost: Any, extra: Sequence[dict[str, float]]) -> Space:
    """Every candidate recipe (:func:`grid.augment.candidate_recipes`, ``extra`` included) x every ladder cell, with
    its dataset's synthesis cost under ``cost`` and its training compute at ``[cost].per_pflop`` (budget unit)."""
    recipes, subsampled = candidate_recipes(config, extra)
    cells = candidate_cells(config)
    data = np.array([sum(v for k, v in cost.spend(r, 1.0).items() if k != COMPUTE) for r in recipes], dtype=float)
    compute = np.array([config.cost.per_pflop * c.train_flops / 1e15 for c in cells], dtype=float)
    recipe_of = np.repeat(np.arange(len(recipes)), len(cells))
    cell_of = np.tile(np.arange(len(cells)), len(recipes))
    return Space(recipes=recipes, cells=cells, recipe_of=recipe_of, cell_of=cell_of, data_cost=data,
                 compute_cost=compute[cell_of], subsampled=subsampled)


def cost_book(space: Space, runs: Sequence[RunRecord]) -> CostBook:
    """The cost book over the experiment's runs (any state): their datasets exist, their cells are taken."""
    rix = {recipe_key(r): i for i, r in enumerate(space.recipes)}
    kix = {(c.model_size, round(c.token_multiplier, 9)): i for i, c in enumerate(space.cells)}
    datasets: dict[int, set[int]] = {}
    used: set[tuple[int, int, int]] = set()
    for r in runs:
        i = rix.get(recipe_key(r.recipe))
        if i is None:
            continue
        datasets.setdefault(i, set()).add(int(r.seed))
        mult = float((r.metadata or {}).get("token_multiplier", 1.0))
        k = kix.get((r.model_size, round(mult, 9)))
        if k is not None:
            used.add((i, k, int(r.seed)))
    next_seed = max((int(r.seed) for r in runs), default=-1) + 1
    return CostBook(space.recipe_of, space.cell_of, space.data_cost, space.compute_cost,
                    {i: sorted(s) for i, s in datasets.items()}, used, next_seed)


def _on_scale(score: np.ndarray, sign: float, scale: str) -> np.ndarray:
    """Scores (a loss negated) -> the fit's residual scale (log of the metric for ``log`` residuals)."""
    metric = sign * score
    return np.log(np.maximum(metric, 1e-300)) if scale == "log" else metric


def ensemble_of(surface: Surface, fit: Any, space: Space, plans: list[dict[str, float]], n_target: float,
                fitted_n: Sequence[float] = ()) -> tuple[Ensemble, np.ndarray]:
    """The draws over the plans and the candidates; also the point prediction of each candidate (metric units).

    ``fitted_n``: N of each fitted run, so that a size above the fit's largest rung counts its runs toward one."""
    sign = -1.0 if fit.target == "loss" else 1.0
    x = space.inputs()
    pl = {k: np.array([p[k] for p in plans], dtype=float) for k in plans[0]}
    scores = np.stack([np.asarray(d(pl, n_target), dtype=float) for d in surface.draws])
    preds = np.stack([_on_scale(np.asarray(d(x, n_target), dtype=float), sign, fit.residual_scale)
                      for d in surface.draws])
    point = sign * np.asarray(surface.score(x, n_target), dtype=float)
    dec = np.zeros(space.size)
    if fit.max_fitted_n:
        dec = np.maximum(0.0, np.log10(x["N"] / fit.max_fitted_n))
    noise = fit.residual_sd ** 2 + ((fit.extrapolation_sd or 0.0) * dec) ** 2
    z = np.random.default_rng(0).standard_normal(scores.shape[0])  # allocate's effect-error normals
    ens = Ensemble(gains=scores[:, 0] - scores[:, 1], scores=scores, preds=preds,
                   noise_var=np.maximum(noise, 1e-12), cand_n=x["N"], target_n=n_target,
                   effect_sd=surface.effect_sd, max_fitted_n=surface.max_fitted_n, z=z,
                   max_compared_n=surface.max_compared_n, sparse_runs=_sparse(fitted_n, surface.max_compared_n),
                   rung_runs=MIN_RUNG_RUNS)
    return ens, point


def _sparse(fitted_n: Sequence[float], rung: float | None) -> dict[float, int]:
    """Fitted runs per size above the largest rung ``rung`` (every size when there is none)."""
    sizes, counts = np.unique(np.asarray(fitted_n, dtype=float), return_counts=True)
    return {float(x): int(c) for x, c in zip(sizes, counts) if rung is None or x > rung}


def rival_plans(request: Any, surface: Surface, plan: dict[str, float], redraws: int) -> list[dict[str, float]]:
    """Optima of the first ``redraws`` draws (warm-started from the plan): the plans a refit could choose."""
    return [solve_levels(request, d, warm=[plan], starts=0) for d in list(surface.draws)[:redraws]]


def width_after(width_now: float, model_now: float, model_after: float) -> float:
    """``allocate``'s gain-interval width expected after runs that take the criterion's width from ``model_now``
    to ``model_after`` (score points): ``sqrt(width_now^2 - model_now^2 + model_after^2)``.

    ``allocate``'s width holds parts the criterion's does not model and no run removes: one run's noise in each
    arm (its interval is predictive) and each arm's error past an axis's tested maximum. They stay; only the
    criterion's part shrinks. Where the criterion's width exceeds ``allocate``'s (nothing left over), the
    shrink is a ratio instead: ``width_now x model_after / model_now``."""
    if model_now <= 0:
        return width_now
    if width_now <= model_now:
        return width_now * model_after / model_now
    return math.sqrt(width_now ** 2 - model_now ** 2 + model_after ** 2)


def _proposed(sel: Selection, space: Space, ens: Ensemble, point: np.ndarray, width_now: float) -> list[ProposedRun]:
    """The chosen runs as rows; expected widths are ``allocate``'s now with the criterion's part shrunk
    (:func:`width_after`)."""
    out, total = [], 0.0
    sd = ens.preds.std(axis=0)
    for i, s in enumerate(sel.steps):
        c = s.index
        cell = space.cells[int(space.cell_of[c])]
        total += s.data_cost + s.compute_cost
        out.append(ProposedRun(
            rank=i + 1, recipe=dict(space.recipes[int(space.recipe_of[c])]), model_size=cell.model_size,
            token_multiplier=cell.token_multiplier, seed=s.seed, model_params=cell.model_params,
            train_tokens=cell.train_tokens, train_flops=cell.train_flops, new_dataset=s.new_dataset,
            data_cost=s.data_cost, compute_cost=s.compute_cost, cost=s.data_cost + s.compute_cost,
            cumulative_cost=total, predicted=float(point[c]), predicted_sd=float(sd[c]),
            expected_width_after=width_after(width_now, sel.width_now, s.width), expected_regret_after=s.regret,
            p_resolved_after=s.p_resolved))
    return out


def _lone_sizes(ns: Sequence[float], names: Sequence[str], ens: Ensemble) -> list[str]:
    """A note per size above the largest rung where the proposed runs (``ns``, named ``names``) and the fit's own
    leave fewer than ``ens.rung_runs`` runs: they are fitted, but that size is not a rung after them."""
    out = []
    for n in sorted(set(ns)):
        if ens.max_compared_n is not None and n <= ens.max_compared_n:
            continue
        mine = sum(1 for x in ns if x == n)
        have = ens.sparse_runs.get(float(n), 0)
        if mine + have < ens.rung_runs:
            name = names[list(ns).index(n)]
            out.append(f"{mine + have} run(s) at {name} after these ({mine} proposed): fewer than {ens.rung_runs}, "
                       f"so {name} is not a rung; they are fitted, but the gain interval keeps its error of "
                       "differences above the largest rung")
    return out


CRITERION = ("preposterior, greedy: each run the one that most lowers the 90% gain-interval width/now + "
             "E[regret]/now per unit of cost; the width is the law draws' linear-Gaussian (ensemble Kalman) "
             "posterior width, the regret an expectation over simulated results re-weighting the draws by "
             "their likelihood, tempered to keep at least min(30, draws/4) effective draws "
             "(allocator/preposterior.py)")


def next_runs_report(report: AllocationReport, sel: Selection, space: Space, ens: Ensemble, point: np.ndarray, *,
                     runs: int, max_cost: float | None, sims: int, compute_free: bool) -> NextRuns:
    """The :class:`NextRuns` answer: the allocation now (``report``), the runs ``sel`` chose, and what they are
    expected to do."""
    iv = report.gain_interval
    width_now = float(iv[1] - iv[0]) if iv else sel.width_now
    proposed = _proposed(sel, space, ens, point, width_now)
    last = sel.steps[-1]
    notes = list(sel.notes)
    notes += _lone_sizes([r.model_params for r in proposed], [r.model_size for r in proposed], ens)
    if space.subsampled:
        notes.append(f"the design levels' full factorial is larger than the candidates considered: a seeded subset "
                     f"of {len(space.recipes)} recipes (plus the experiment's own and the plans)")
    rule = ("a new dataset's synthesis cost (the allocator's cost model) plus training compute at "
            "[cost].per_pflop x 6 N D")
    if compute_free:
        rule += ("; [cost].per_pflop is 0, so training is free here and a run that reuses an existing dataset "
                 "costs nothing")
    return NextRuns(
        experiment=report.experiment, benchmark=report.benchmark, metric=report.metric, law=report.law,
        fit_id=report.fit_id, target=report.target, simulated=report.simulated, budget=report.budget,
        model_params=report.model_params, plan_levels=report.plan.levels, baseline_levels=report.baseline.levels,
        gain_over_baseline=report.gain_over_baseline, gain_interval=iv, decision=report.decision,
        width_now=width_now, expected_regret_now=sel.regret_now,
        runs=proposed, total_cost=proposed[-1].cumulative_cost, max_cost=max_cost,
        expected_width_after=proposed[-1].expected_width_after,
        width_floor=width_after(width_now, sel.width_now, 0.0), expected_regret_after=last.regret,
        p_resolved_after=last.p_resolved,
        criterion=CRITERION, candidates=space.size, draws=ens.n_draws, simulations=sims, mean_ess=last.ess,
        cost_rule=rule, notes=notes)
