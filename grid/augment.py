"""Runs added to an experiment after its design: the candidate space of `toolscale next` and `grid design --augment`.

Pure functions of the config (no I/O) plus one registry edge, :func:`record_augment`:

- :func:`candidate_cells`: every (ladder rung, token multiple) a new run may train at: all rungs of the
  ladder (the fitted ones, any between them and those above), crossed with the design's token multiples
  (or tokens-per-parameter multiples), with planned N, D and FLOPs as ``grid design`` plans them;
- :func:`candidate_recipes`: recipes of the design space: the full factorial of each axis' design levels
  (a seeded subset when it is larger than ``limit``), plus extra recipes given (the experiment's own and
  the allocation's plans), clipped to each axis' range, integers rounded, the design's constraints applied;
- :func:`augment_runs`: proposed rows (recipe, rung, token multiple, seed) as pending
  :class:`grid.models.RunSpec` of their own group (design version ``next-`` + 12 hex digits), fitted
  (``split = "fit"``), with the metadata a launch reads (steps, learning rate, parameter counts).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grid.design import _cells
from grid.errors import DesignError
from grid.levels import apply_constraints, level_values, parse_constraint
from grid.models import AUGMENT_KIND, RunSpec, run_id_for
from toolscale.config import ExperimentConfig

__all__ = ["AUGMENT_KIND", "CandidateCell", "candidate_cells", "candidate_recipes", "augment_group", "augment_runs",
           "record_augment", "recipe_key", "MAX_RECIPES"]

MAX_RECIPES = 4096
"""Recipes of the full factorial of design levels beyond which a seeded subset of this size is taken."""


@dataclass(frozen=True)
class CandidateCell:
    """A (rung, token multiple) a new run may train at, planned as ``grid design`` plans it."""

    model_size: str
    """Ladder rung name."""
    token_multiplier: float
    """Token multiple (of the rung's steps, or tokens per parameter with ``design.tokens_per_param``)."""
    model_params: float
    """Planned parameters N (the count ``design.param_count`` names)."""
    train_tokens: float
    """Planned training tokens D."""
    train_flops: float
    """Planned training FLOPs ``6 N D``."""
    max_steps: int
    """Optimizer steps."""


def candidate_cells(config: ExperimentConfig) -> list[CandidateCell]:
    """Every rung of the ladder x every token multiple of the design, in ladder order (``grid.design`` cells)."""
    config.require_ladder("toolscale next")
    return [CandidateCell(model_size=c.rung.name, token_multiplier=c.multiplier, model_params=c.params,
                          train_tokens=c.tokens, train_flops=c.flops, max_steps=c.steps) for c in _cells(config)]


def recipe_key(recipe: Mapping[str, float]) -> str:
    """A stable text key of a recipe (levels rounded to 10 significant digits, axes sorted)."""
    return json.dumps(sorted((k, float(f"{float(v):.10g}")) for k, v in recipe.items()))


def _clip(config: ExperimentConfig, recipe: Mapping[str, float]) -> dict[str, float]:
    """``recipe`` over the config's axes, each level clipped to its range and integer axes rounded."""
    out = {}
    for a in config.axes:
        x = float(recipe.get(a.name, a.baseline_level))
        x = min(max(x, a.min), a.max)
        if a.integer:
            x = float(min(max(math.floor(x + 0.5), math.ceil(a.min)), math.floor(a.max)))
        out[a.name] = float(f"{x:.10g}")
    return out


def candidate_recipes(config: ExperimentConfig, extra: Sequence[Mapping[str, float]] = (), *,
                      limit: int = MAX_RECIPES, seed: int = 0) -> tuple[list[dict[str, float]], bool]:
    """``(recipes, subsampled)``: the design levels' full factorial (or a seeded subset of ``limit``), then ``extra``.

    Each recipe is clipped to the axes' ranges, rounded on integer axes, and moved by the design's
    constraints (:func:`grid.levels.apply_constraints`); recipes a constraint cannot satisfy are dropped
    and duplicates kept once (first occurrence).
    """
    names = [a.name for a in config.axes]
    levels = [level_values(a, a.levels) for a in config.axes]
    total = math.prod(len(v) for v in levels)
    subsampled = total > limit
    if subsampled:
        rng = np.random.default_rng(seed)
        picks = sorted(rng.choice(total, size=limit, replace=False).tolist())
        grid = [_unravel(i, [len(v) for v in levels]) for i in picks]
        combos = [tuple(levels[j][ix[j]] for j in range(len(names))) for ix in grid]
    else:
        combos = list(itertools.product(*levels))
    constraints = [parse_constraint(t, names) for t in config.design.constraints]
    axes = {a.name: a for a in config.axes}
    out, seen = [], set()
    for raw in [dict(zip(names, c)) for c in combos] + [_clip(config, r) for r in extra]:
        try:
            recipe, _ = apply_constraints(raw, constraints, axes)
        except DesignError:
            continue
        key = recipe_key(recipe)
        if key not in seen:
            seen.add(key)
            out.append(recipe)
    return out, subsampled


def _unravel(i: int, sizes: Sequence[int]) -> list[int]:
    out = []
    for s in reversed(sizes):
        out.append(i % s)
        i //= s
    return out[::-1]


def augment_group(rows: Sequence[Mapping[str, Any]]) -> str:
    """The group (design version) of a proposal: ``next-`` + the first 12 hex digits of the sha256 of its rows."""
    key = [[recipe_key(r["recipe"]), r["model_size"], float(r["token_multiplier"]), int(r["seed"])] for r in rows]
    return "next-" + hashlib.sha256(json.dumps(key).encode()).hexdigest()[:12]


def augment_runs(config: ExperimentConfig, rows: Sequence[Mapping[str, Any]], *, group: str | None = None,
                 learning_rates: Mapping[str, float] | None = None) -> list[RunSpec]:
    """Pending, fitted runs of the proposal ``rows`` (dicts with ``recipe``, ``model_size``, ``token_multiplier``,
    ``seed``), in the group ``group`` (default :func:`augment_group`).

    Raises :class:`grid.errors.DesignError` (one line, nothing built) for a rung or token multiple the config
    does not plan, or a recipe whose axes are not the config's or lie outside their ranges.
    """
    if not rows:
        raise DesignError("the proposal has no runs to add")
    group = group or augment_group(rows)
    cells = {(c.model_size, round(c.token_multiplier, 9)): c for c in candidate_cells(config)}
    names = {a.name for a in config.axes}
    out = []
    for i, r in enumerate(rows):
        cell = cells.get((r["model_size"], round(float(r["token_multiplier"]), 9)))
        if cell is None:
            raise DesignError(f"proposed run {i + 1}: rung {r['model_size']!r} x tokens {r['token_multiplier']:g} is "
                              f"not a cell of this config (rungs: {', '.join(m.name for m in config.ladder)})")
        recipe = {k: float(v) for k, v in r["recipe"].items()}
        if set(recipe) != names:
            raise DesignError(f"proposed run {i + 1}: axes {sorted(recipe)} are not the config's {sorted(names)}")
        for a in config.axes:
            if not a.min - 1e-9 <= recipe[a.name] <= a.max + 1e-9:
                raise DesignError(f"proposed run {i + 1}: {a.name} = {recipe[a.name]:g} is outside its range "
                                  f"{a.min:g}..{a.max:g}")
        rung = config.model_size(cell.model_size)
        seed = int(r["seed"])
        out.append(RunSpec(
            run_id=run_id_for(config.experiment.name, group, recipe, cell.model_size, seed, cell.token_multiplier),
            experiment=config.experiment.name, design_version=group, recipe=recipe, model_size=cell.model_size,
            model_params=cell.model_params, train_tokens=cell.train_tokens, train_flops=cell.train_flops,
            token_multiplier=cell.token_multiplier, seed=seed, split="fit",
            metadata={"group": group, "design_kind": AUGMENT_KIND, "rank": i + 1, "max_steps": cell.max_steps,
                      "params_total": rung.approx_params, "params_nonembedding": rung.approx_params_nonembedding,
                      "param_count": config.design.param_count,
                      "learning_rate": float((learning_rates or {}).get(rung.name, rung.learning_rate))}))
    return out


def record_augment(registry: Any, config: ExperimentConfig, runs: Sequence[RunSpec], proposal: Mapping[str, Any]
                   ) -> tuple[bool, int]:
    """Record the group's design row (``kind = "augment"``, the proposal kept whole) and its runs as pending.

    ``registry`` is an open :class:`grid.registry.Registry`. Returns ``(new_group, new_runs)``; adding
    the same proposal again adds nothing. Raises :class:`grid.errors.DesignError` when the experiment
    is not in the registry (augment a recorded design).
    """
    name = config.experiment.name
    if name not in {e.name for e in registry.experiments()}:
        raise DesignError(f"experiment {name!r} is not in this registry; record its design first "
                          f"(toolscale grid design CONFIG)")
    group = runs[0].design_version
    summary = {"kind": AUGMENT_KIND, "group": group, "runs": len(runs), "proposal": dict(proposal)}
    new_group = registry.add_design(group, name, summary)
    new_runs = registry.add_runs(list(runs), source=AUGMENT_KIND, status="pending")
    return new_group, new_runs
