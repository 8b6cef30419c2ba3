"""The experimental design: data-axis points x the model ladder x token multiples, split by FLOPs.

``build_design(config) -> Design`` is pure (config in, planned runs out). Steps:

1. a coded design over the data axes (:mod:`grid.coded`: two-level fraction, GSD, full
   factorial or Latin hypercube), plus center points;
2. its alias report (:mod:`grid.alias`);
3. coded -> real levels with constraints (:mod:`grid.levels`);
4. crossing with *cells* = (ladder rung, token multiplier): every cell gets every point,
   except the top-FLOPs cell, which gets a D-optimal subset sized so that it is the
   held-out share (``design.heldout_points`` overrides the size). With a held-out share and
   two or more rungs, the top rung runs only at its largest token multiplier;
5. the split: :func:`grid.split.heldout_mask` on planned FLOPs (``6 N D``), recorded in
   each run's ``split`` before any result exists, and a check that the largest held-out
   run sits at least ``design.min_extrapolation_factor`` above the largest fitted run.

The design ``version`` hashes the config parts that determine the runs (experiment name
and seeds, axes, ladder, design section, and this module's algorithm version); the same
config always gives the same version and the same run ids.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from grid.alias import ROMAN, AliasReport, alias_report
from grid.coded import fractional, greedy_d_optimal, latin_hypercube, multilevel
from grid.errors import DesignError
from grid.levels import apply_constraints, coded_to_real, level_values, parse_constraint
from grid.models import RunSpec, run_id_for
from grid.split import SPLIT_RULE, heldout_mask
from toolscale.config import ExperimentConfig, ModelSize

__all__ = ["Design", "Cell", "build_design", "design_version", "ALGORITHM_VERSION"]

ALGORITHM_VERSION = "1"
"""Bumped when the same config would give different runs; part of every design version."""


class Cell(BaseModel):
    """One (rung, token multiplier) cell of the crossing: every run in it has the same planned FLOPs."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    model_size: str
    """Ladder rung."""
    token_multiplier: float
    """Multiple of the rung's planned tokens."""
    model_params: float
    """Planned parameters N (``ModelSize.approx_params``)."""
    max_steps: int
    """Optimizer steps a run trains: ``ceil(rung max_steps x token_multiplier)``."""
    train_tokens: float
    """Planned tokens D = max_steps x batch_size x max_seq_len."""
    train_flops: float
    """Planned training FLOPs, 6 N D."""
    runs: int
    """Runs in this cell."""
    split: str
    """``fit``, ``heldout`` or ``mixed``."""


class Design(BaseModel):
    """A built design: planned runs with their split, and what the design can estimate."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    experiment: str
    """Experiment name."""
    version: str
    """Content hash of the config parts that determine the design (``d-`` + 12 hex digits)."""
    kind: str
    """Design kind (``fractional``, ``gsd``, ``full``, ``lhs``)."""
    runs: list[RunSpec]
    """Planned runs, split set, in cell / point / replicate order."""
    points: list[dict[str, float]]
    """Real levels of every design point (center points included), in design order."""
    cells: list[Cell]
    """The (rung, token multiplier) cells, in ladder order."""
    alias: AliasReport
    """Alias report of the factorial part (center points excluded)."""
    summary: dict[str, Any]
    """JSON-able summary: runs, levels per axis, resolution, held-out runs, extrapolation factor, cost..."""


def design_version(config: ExperimentConfig) -> str:
    """``d-`` + the first 12 hex digits of the sha256 of the design-determining config parts."""
    key = {
        "algorithm": ALGORITHM_VERSION,
        "experiment": config.experiment.name,
        "seeds": list(config.experiment.seeds),
        "axes": [a.model_dump(mode="json") for a in config.axes],
        "ladder": [m.model_dump(mode="json") for m in config.ladder],
        "design": config.design.model_dump(mode="json"),
    }
    return "d-" + hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def _coded(config: ExperimentConfig) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """(design matrix, matrix to analyse, info) in coded units, center points excluded."""
    spec, axes = config.design, config.axes
    names = [a.name for a in axes]
    if spec.foldover and spec.kind != "fractional":
        raise DesignError(f"design.foldover applies to two-level fractional designs, not kind {spec.kind!r}")
    if spec.kind == "fractional":
        for a in axes:
            level_values(a, 2)
        fold = [names.index(f) for f in spec.foldover]
        h, gen, twin = fractional(len(axes), resolution=spec.resolution, points=spec.fraction_points,
                                  generators=spec.generators, foldover=fold)
        return h, twin, {"generators": gen, "levels": {a.name: 2 for a in axes}}
    if spec.kind in ("gsd", "full"):
        for a in axes:
            level_values(a, a.levels)
        levels = [a.levels for a in axes]
        h = multilevel(levels, 1 if spec.kind == "full" else spec.gsd_reduction)
        return h, h, {"levels": {a.name: a.levels for a in axes},
                      "gsd_reduction": spec.gsd_reduction if spec.kind == "gsd" else None}
    h = latin_hypercube(len(axes), spec.lhs_samples, spec.seed)
    return h, h, {"lhs_samples": spec.lhs_samples}


def _seed(config: ExperimentConfig, i: int) -> int:
    seeds = list(config.experiment.seeds) or [0]
    base = seeds[i] if i < len(seeds) else max(seeds) + 1 + (i - len(seeds))
    return int(base + config.design.seed)


def _cells(config: ExperimentConfig) -> list[tuple[ModelSize, float, int, float, float]]:
    """(rung, multiplier, steps, N, D) for every cell, ladder order then multiplier order."""
    mults = config.design.token_multipliers
    if not mults:
        raise DesignError("design.token_multipliers is empty; use [1.0] for the rungs' own token counts")
    bad = [m for m in mults if not (math.isfinite(m) and m > 0)]
    if bad:
        raise DesignError(f"design.token_multipliers must be positive numbers, got {bad}")
    if len(set(mults)) != len(mults):
        raise DesignError(f"design.token_multipliers has duplicates: {mults}")
    out = []
    for rung in config.ladder:
        for m in mults:
            steps = max(1, math.ceil(rung.max_steps * m - 1e-9))
            tokens = float(steps * rung.batch_size * rung.max_seq_len)
            out.append((rung, float(m), steps, rung.approx_params, tokens))
    return out


def _plan_points(config: ExperimentConfig):
    """Coded points (center points last), center flags, real recipes, constrained count, alias report, info."""
    spec = config.design
    axes = {a.name: a for a in config.axes}
    names = [a.name for a in config.axes]
    constraints = [parse_constraint(t, names) for t in spec.constraints]
    h, twin, info = _coded(config)
    report = alias_report(twin, names, [a.kind for a in config.axes], regular=spec.kind == "fractional")
    coded = np.vstack([h, np.zeros((spec.center_points, len(names)))]) if spec.center_points else h
    is_center = [False] * h.shape[0] + [True] * spec.center_points
    reals = {a.name: coded_to_real(a, coded[:, i]) for i, a in enumerate(config.axes)}
    points, constrained = [], 0
    for p in range(coded.shape[0]):
        recipe, changed = apply_constraints({n: reals[n][p] for n in names}, constraints, axes)
        points.append(recipe)
        constrained += changed
    return coded, is_center, points, constrained, report, info


def _point_seeds(config: ExperimentConfig, is_center: list[bool]) -> list[list[int]]:
    """Seeds of each point: replicate r of a factorial point gets seed index r, center copy c gets c x R + r."""
    reps = config.design.replicates
    out, center_no = [], 0
    for center in is_center:
        if center:
            out.append([_seed(config, center_no * reps + r) for r in range(reps)])
            center_no += 1
        else:
            out.append([_seed(config, r) for r in range(reps)])
    return out


def _top_points(fraction: float, other_runs: int, replicates: int) -> int:
    """Fewest points K for the top cell such that ``heldout_mask`` holds out exactly that cell.

    ``heldout_mask`` holds out the ``ceil(f n)`` largest runs (ties included), so the top cell's
    ``T = K x replicates`` runs must satisfy ``ceil(f (other + T)) <= T``; the smallest such T is
    about ``f / (1 - f) x other``. The same float expression as the mask is used, so the two agree.
    """
    k = max(1, math.ceil(math.ceil(fraction / (1 - fraction) * other_runs - 1e-9) / replicates))
    while math.ceil(fraction * (other_runs + k * replicates)) > k * replicates:
        k += 1
    return k


def build_design(config: ExperimentConfig) -> Design:
    """Plan every run of the experiment: points x cells x seeds, with the held-out split.

    Parameters
    ----------
    config : the validated experiment config (axes, ladder, design, experiment seeds).

    Returns
    -------
    Design
        ``runs`` (``RunSpec`` with planned ``model_params`` N, ``train_tokens`` D,
        ``train_flops = 6 N D`` and ``split``), ``version`` and ``summary``.

    Raises
    ------
    DesignError
        Too few levels, an unreachable resolution, an empty or collapsing axis range,
        conflicting constraints, a held-out split without a fitted run, or held-out runs
        less than ``design.min_extrapolation_factor`` above the fitted ones.

    Notes
    -----
    Planned FLOPs follow Kaplan et al. (2020): ``C = 6 N D`` with ``N`` the rung's
    parameters and ``D = steps x batch_size x max_seq_len`` (an upper bound on tokens
    seen). The top-FLOPs cell is crossed with ``K`` points, ``K`` the smallest count for
    which it makes up the held-out share ``f`` of the runs:
    ``K = ceil(f / (1 - f) x other_runs / replicates)``.
    """
    spec = config.design
    config.require_ladder("grid design")
    names = [a.name for a in config.axes]
    version = design_version(config)
    coded, is_center, points, constrained, report, info = _plan_points(config)
    point_seeds = _point_seeds(config, is_center)

    cells = _cells(config)
    f = spec.heldout_fraction
    top = int(np.argmax([6.0 * n * d for _, _, _, n, d in cells]))
    if f > 0 and len(config.ladder) > 1:
        # The top rung runs only at its largest multiple: its smaller multiples would be fitted runs at
        # the largest N and shrink the extrapolation range the held-out check is about.
        top_rung = cells[top][0].name
        cells = [c for i, c in enumerate(cells) if c[0].name != top_rung or i == top]
        top = int(np.argmax([6.0 * n * d for _, _, _, n, d in cells]))
    per_cell = len(points) * spec.replicates
    cell_points: list[list[int]] = [list(range(len(points))) for _ in cells]
    if f > 0:
        if len(cells) < 2:
            raise DesignError("the held-out rule needs at least two FLOPs levels (ladder rungs or "
                              "design.token_multipliers); set design.heldout_fraction = 0 to hold out nothing")
        k = spec.heldout_points or _top_points(f, per_cell * (len(cells) - 1), spec.replicates)
        if spec.heldout_points is not None and k > len(points):
            raise DesignError(f"design.heldout_points = {k} exceeds the {len(points)} design points")
        cell_points[top] = greedy_d_optimal(coded, min(k, len(points)))

    runs: list[RunSpec] = []
    seen: set[str] = set()
    duplicates = 0
    for c, (rung, mult, steps, n_params, tokens) in enumerate(cells):
        for p in cell_points[c]:
            for seed in point_seeds[p]:
                rid = run_id_for(config.experiment.name, version, points[p], rung.name, seed, mult)
                if rid in seen:
                    duplicates += 1
                    continue
                seen.add(rid)
                runs.append(RunSpec(
                    run_id=rid, experiment=config.experiment.name, design_version=version, recipe=points[p],
                    model_size=rung.name, model_params=n_params, train_tokens=tokens,
                    train_flops=6.0 * n_params * tokens, token_multiplier=mult, seed=seed,
                    metadata={"point": p, "center": is_center[p], "max_steps": steps, "design_kind": spec.kind,
                              "coded": {n: round(float(coded[p, i]), 6) for i, n in enumerate(names)}}))

    rule = SPLIT_RULE.format(fraction=f)
    mask = heldout_mask([r.train_flops for r in runs], f) if f > 0 else [False] * len(runs)
    runs = [r.model_copy(update={"split": "heldout" if m else "fit",
                                 "metadata": {**r.metadata, "split_rule": rule}}) for r, m in zip(runs, mask)]
    fit_flops = [r.train_flops for r in runs if r.split == "fit"]
    held_flops = [r.train_flops for r in runs if r.split == "heldout"]
    factor = None
    if f > 0:
        if not fit_flops:
            raise DesignError(f"every run is held out by rule {rule} (ties at the top FLOPs); add a smaller rung "
                              f"or token multiplier")
        factor = max(held_flops) / max(fit_flops)
        if factor < spec.min_extrapolation_factor - 1e-9:
            rung, mult, steps = cells[top][0], cells[top][1], cells[top][2]
            need = math.ceil(rung.max_steps * spec.min_extrapolation_factor / factor)
            raise DesignError(
                f"held-out runs reach only {factor:.3g}x the largest fitted run's FLOPs, below "
                f"design.min_extrapolation_factor = {spec.min_extrapolation_factor:g}; raise rung {rung.name!r} "
                f"max_steps to >= {need} (or add a larger rung / token multiplier)")

    cell_rows = []
    for c, (rung, mult, steps, n_params, tokens) in enumerate(cells):
        in_cell = [r for r in runs if r.model_size == rung.name and r.token_multiplier == mult]
        splits = {r.split for r in in_cell}
        cell_rows.append(Cell(model_size=rung.name, token_multiplier=mult, model_params=n_params, max_steps=steps,
                              train_tokens=tokens, train_flops=6.0 * n_params * tokens, runs=len(in_cell),
                              split=splits.pop() if len(splits) == 1 else ("mixed" if splits else "none")))
    summary = _summary(config, version, runs, points, is_center, cell_rows, report, info, rule, factor,
                       constrained, duplicates)
    return Design(experiment=config.experiment.name, version=version, kind=spec.kind, runs=runs, points=points,
                  cells=cell_rows, alias=report, summary=summary)


def _summary(config: ExperimentConfig, version: str, runs: list[RunSpec], points: list[dict[str, float]],
             is_center: list[bool], cells: list[Cell], report: AliasReport, info: dict[str, Any], rule: str,
             factor: float | None, constrained: int, duplicates: int) -> dict[str, Any]:
    names = [a.name for a in config.axes]
    levels = {n: sorted({p[n] for p in points}) for n in names}
    datasets = {(json.dumps(r.recipe, sort_keys=True), r.seed) for r in runs}
    data_cost = 0.0
    for recipe_json, _ in datasets:
        recipe = json.loads(recipe_json)
        data_cost += sum(config.axis(n).cost_per_unit * recipe[n] for n in names)
    compute_cost = sum(config.cost.per_pflop * (r.train_flops or 0.0) / 1e15 for r in runs)
    flops = [r.train_flops for r in runs]
    held = [r for r in runs if r.split == "heldout"]
    res = report.resolution
    return {
        "experiment": config.experiment.name,
        "design_version": version,
        "kind": config.design.kind,
        "runs": len(runs),
        "points": len(points),
        "center_points": sum(is_center),
        "replicates": config.design.replicates,
        "datasets": len(datasets),
        "levels": levels,
        "level_counts": {n: len(v) for n, v in levels.items()},
        "units": {a.name: a.unit for a in config.axes},
        "resolution": res,
        "resolution_roman": ROMAN.get(res, str(res)) if res is not None else None,
        "generators": info.get("generators"),
        "gsd_reduction": info.get("gsd_reduction"),
        "d_efficiency": report.d_efficiency,
        "alias_highlights": report.highlights[:12],
        "qd_clear_of_main": report.qd_clear_of_main,
        "qd_statement": report.statement,
        "split_rule": rule,
        "fit_runs": len(runs) - len(held),
        "heldout_runs": len(held),
        "heldout_share": round(len(held) / len(runs), 6) if runs else 0.0,
        "extrapolation_factor": round(factor, 6) if factor is not None else None,
        "min_extrapolation_factor": config.design.min_extrapolation_factor,
        "flops_range": [min(flops), max(flops)] if flops else None,
        "cells": [c.model_dump(mode="json") for c in cells],
        "constrained_points": constrained,
        "duplicate_runs_dropped": duplicates,
        "estimated_cost": {"unit": config.experiment.budget_unit, "data": round(data_cost, 2),
                           "compute": round(compute_cost, 2), "total": round(data_cost + compute_cost, 2)},
    }
