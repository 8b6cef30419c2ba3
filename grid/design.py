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
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from grid.alias import ROMAN, AliasReport, alias_report
from grid.coded import fractional, greedy_d_optimal, latin_hypercube, multilevel
from grid.errors import DesignError
from grid.levels import apply_constraints, coded_to_real, level_values, parse_constraint
from grid.models import Cell, DesignRecorded, DesignSummary, EstimatedCost, RunSpec, run_id_for
from grid.split import SPLIT_RULE, heldout_mask
from grid.storage import storage_estimate
from toolscale.config import ExperimentConfig, ModelSize, min_kept_steps, training_flops

__all__ = ["Design", "Cell", "DesignReport", "build_design", "design_version", "planned_epochs", "ALGORITHM_VERSION"]

ALGORITHM_VERSION = "1"
"""Bumped when the same config would give different runs; part of every design version."""
MAX_CANDIDATES = 100_000
"""Most candidate points of a full or GSD design (the product of the axes' levels), built in memory."""


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
    summary: DesignSummary
    """Runs, levels per axis, resolution, held-out runs, extrapolation factor, cost..."""


class DesignReport(DesignSummary):
    """``toolscale grid design --json``: the summary's fields, what was written, the alias report and
    (with ``--show-runs``) the runs; the output is ``model_dump(mode="json", exclude_none=...)`` of this model."""

    dry_run: bool
    """True when nothing was written (``--dry-run``)."""
    written: DesignRecorded | None
    """What recording the design changed; None on a dry run."""
    alias: AliasReport
    """The alias report of the factorial part."""
    run_list: list[RunSpec] | None = None
    """Every planned run (``--show-runs`` only; left out of the JSON otherwise)."""

    @classmethod
    def of(cls, design: Design, written: DesignRecorded | None, *, show_runs: bool = False) -> DesignReport:
        """The report of ``design`` (``written`` None: a dry run)."""
        return cls(**dict(design.summary), dry_run=written is None, written=written, alias=design.alias,
                   run_list=list(design.runs) if show_runs else None)


def design_version(config: ExperimentConfig, learning_rates: dict[str, float] | None = None) -> str:
    """``d-`` + the first 12 hex digits of the sha256 of the design-determining config parts (and the
    learning rates a scan's rule set, when given)."""
    key: dict[str, Any] = {
        "algorithm": ALGORITHM_VERSION,
        "experiment": config.experiment.name,
        "seeds": list(config.experiment.seeds),
        "axes": [a.model_dump(mode="json") for a in config.axes],
        # the per-GPU micro batch changes how a step is computed, not what is trained
        "ladder": [m.model_dump(mode="json", exclude={"micro_batch_size"}) for m in config.ladder],
        "design": config.design.model_dump(mode="json"),
    }
    if config.train.max_epochs is not None:
        key["max_epochs"] = config.train.max_epochs
    if learning_rates:
        key["learning_rates"] = {k: float(v) for k, v in sorted(learning_rates.items())}
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
        levels = [a.levels for a in axes]
        if math.prod(levels) > MAX_CANDIDATES:
            raise DesignError(f"a {spec.kind} design over {' x '.join(map(str, levels))} levels has "
                              f"{math.prod(levels):,} candidate points, more than {MAX_CANDIDATES:,}; use fewer "
                              "levels or axes, or kind = 'lhs'")
        for a in axes:
            level_values(a, a.levels)
        h = multilevel(levels, 1 if spec.kind == "full" else spec.gsd_reduction)
        return h, h, {"levels": {a.name: a.levels for a in axes},
                      "gsd_reduction": spec.gsd_reduction if spec.kind == "gsd" else None}
    h = latin_hypercube(len(axes), spec.lhs_samples, spec.seed)
    return h, h, {"lhs_samples": spec.lhs_samples}


def _seed(config: ExperimentConfig, i: int) -> int:
    seeds = list(config.experiment.seeds) or [0]
    base = seeds[i] if i < len(seeds) else max(seeds) + 1 + (i - len(seeds))
    return int(base + config.design.seed)


@dataclass(frozen=True)
class _CellPlan:
    """One (rung, token multiplier) cell before its runs exist."""

    rung: ModelSize
    multiplier: float
    steps: int
    """Optimizer steps: ``ceil(rung.max_steps x multiplier)`` (or from tokens per parameter, :func:`_cells`)."""
    params: float
    """Planned parameters N."""
    tokens: float
    """Planned tokens D = steps x batch_size x max_seq_len."""
    context: float = 0.0
    """Mean tokens of a training sequence (the attention context the FLOPs count); 0: the rung's max_seq_len."""

    @property
    def flops(self) -> float:
        """Planned training FLOPs with attention and the unembedding (:meth:`ModelSize.real_flops`): what the
        split and the extrapolation factor use."""
        return self.rung.real_flops(self.tokens, self.context or None)

    @property
    def flops_6nd(self) -> float:
        """Planned ``6 N D`` (N as ``design.param_count`` counts it), recorded beside."""
        return training_flops(self.params, self.tokens)


@dataclass(frozen=True)
class _Points:
    """The design points over the data axes (center points last)."""

    coded: np.ndarray
    """Coded levels, shape (points, axes), in [-1, 1]."""
    is_center: list[bool]
    """Whether each point is a center point."""
    recipes: list[dict[str, float]]
    """Real levels of each point after the constraints, keyed by axis name."""
    constrained: int
    """Points the constraints moved."""
    alias: AliasReport
    """Alias report of the factorial part."""
    info: dict[str, Any]
    """Kind-specific facts: ``generators``, ``levels``, ``gsd_reduction``, ``lhs_samples``."""


@dataclass(frozen=True)
class _Split:
    """The held-out split of the runs."""

    rule: str
    """The rule, in words (:data:`grid.split.SPLIT_RULE`)."""
    factor: float | None
    """Largest held-out FLOPs / largest fitted FLOPs (attention and unembedding counted); None when nothing is
    held out."""
    factor_6nd: float | None = None
    """The same in ``6 N D``."""


def _cells(config: ExperimentConfig) -> list[_CellPlan]:
    """Every (rung, token multiplier) cell, ladder order then multiplier order.

    With ``design.tokens_per_param`` the multiplier is D / N: ``steps = ceil(tpp x N / (batch x s))``
    with ``s = design.tokens_per_sequence`` and planned ``D = steps x batch x s``; otherwise it multiplies
    the rung's ``max_steps`` and ``D = steps x batch x max_seq_len``. N is the count ``design.param_count``
    names.
    """
    count = config.design.param_count
    tpp = config.design.tokens_per_param
    if tpp is not None:
        bad = [m for m in tpp if not (math.isfinite(m) and m > 0)]
        if not tpp or bad:
            raise DesignError(f"design.tokens_per_param must be positive numbers, got {bad or tpp}")
        if len(set(tpp)) != len(tpp):
            raise DesignError(f"design.tokens_per_param has duplicates: {tpp}")
        seq = config.design.tokens_per_sequence
        planned = []
        for rung in config.ladder:
            n = rung.counted_params(count)
            for m in tpp:
                steps = max(1, math.ceil(m * n / (rung.batch_size * seq) - 1e-9))
                planned.append(_CellPlan(rung=rung, multiplier=float(m), steps=steps, params=n,
                                         tokens=float(steps * rung.batch_size * seq), context=seq))
        return planned
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
            out.append(_CellPlan(rung=rung, multiplier=float(m), steps=steps, params=rung.counted_params(count),
                                 tokens=float(steps * rung.batch_size * rung.max_seq_len)))
    return out


def _plan_points(config: ExperimentConfig) -> _Points:
    """Coded points (center points last), real recipes after the constraints, and the alias report."""
    spec = config.design
    axes = {a.name: a for a in config.axes}
    names = [a.name for a in config.axes]
    constraints = [parse_constraint(t, names) for t in spec.constraints]
    h, twin, info = _coded(config)
    report = alias_report(twin, names, [a.kind for a in config.axes], regular=spec.kind == "fractional")
    coded = np.vstack([h, np.zeros((spec.center_points, len(names)))]) if spec.center_points else h
    is_center = [False] * h.shape[0] + [True] * spec.center_points
    reals = {a.name: coded_to_real(a, coded[:, i]) for i, a in enumerate(config.axes)}
    recipes, constrained = [], 0
    for p in range(coded.shape[0]):
        recipe, changed = apply_constraints({n: reals[n][p] for n in names}, constraints, axes)
        recipes.append(recipe)
        constrained += changed
    return _Points(coded=coded, is_center=is_center, recipes=recipes, constrained=constrained, alias=report,
                   info=info)


def _point_seeds(config: ExperimentConfig, is_center: list[bool], reps: int | None = None) -> list[list[int]]:
    """Seeds of each point: replicate r of a factorial point gets seed index r, center copy c gets c x R + r
    (``R = reps``, default ``design.replicates``)."""
    reps = reps or config.design.replicates
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


def _top_cell(cells: list[_CellPlan]) -> int:
    """Index of the cell with the most planned FLOPs (the first of any tie)."""
    return int(np.argmax([c.flops for c in cells]))


def _crossing(config: ExperimentConfig, cells: list[_CellPlan], points: _Points
              ) -> tuple[list[_CellPlan], int, list[list[int]]]:
    """``(cells, top, points of each cell)``: which design points each cell is crossed with.

    With a held-out share and two or more rungs, the top rung keeps only its largest
    multiple. Every cell gets every point except the top-FLOPs one, which gets a
    D-optimal subset of :func:`_top_points` points (or ``design.heldout_points``).
    """
    spec = config.design
    f = spec.heldout_fraction
    top = _top_cell(cells)
    if f > 0 and len(config.ladder) > 1:
        # The top rung runs only at its largest multiple: its smaller multiples would be fitted runs at
        # the largest N and shrink the extrapolation range the held-out check is about.
        top_rung = cells[top].rung.name
        cells = [c for i, c in enumerate(cells) if c.rung.name != top_rung or i == top]
        top = _top_cell(cells)
    n_points = len(points.recipes)
    cell_points: list[list[int]] = [list(range(n_points)) for _ in cells]
    if f > 0:
        if len(cells) < 2:
            raise DesignError("the held-out rule needs at least two FLOPs levels (ladder rungs or "
                              "design.token_multipliers); set design.heldout_fraction = 0 to hold out nothing")
        reps = _cell_replicates(config, cells)
        others = sum(n_points * r for i, r in enumerate(reps) if i != top)
        k = spec.heldout_points or _top_points(f, others, reps[top])
        if spec.heldout_points is not None and k > n_points:
            raise DesignError(f"design.heldout_points = {k} exceeds the {n_points} design points")
        cell_points[top] = greedy_d_optimal(points.coded, min(k, n_points))
    return cells, top, cell_points


def _cell_replicates(config: ExperimentConfig, cells: list[_CellPlan]) -> list[int]:
    """Seeds per point of each cell: ``heldout_replicates`` in the top-FLOPs cell when runs are held out,
    ``top_fit_replicates`` in every cell of the largest fitted rung, ``replicates`` elsewhere."""
    spec = config.design
    top = _top_cell(cells) if spec.heldout_fraction > 0 and len(cells) > 1 else None
    fitted = [c for i, c in enumerate(cells) if i != top]
    big = max(fitted, key=lambda c: c.params).rung.name if fitted else None
    out = []
    for i, c in enumerate(cells):
        if i == top:
            out.append(spec.heldout_replicates or spec.replicates)
        elif c.rung.name == big and not (top is not None and c.rung.name == cells[top].rung.name):
            out.append(spec.top_fit_replicates or spec.replicates)
        else:
            out.append(spec.replicates)
    return out


def _expand_runs(config: ExperimentConfig, version: str, cells: list[_CellPlan], cell_points: list[list[int]],
                 points: _Points, learning_rates: dict[str, float] | None = None) -> tuple[list[RunSpec], int]:
    """``(runs, duplicates dropped)``: cell x point x seed, each run once (constraints can merge points)."""
    names = [a.name for a in config.axes]
    reps = _cell_replicates(config, cells)
    runs: list[RunSpec] = []
    seen: set[str] = set()
    duplicates = 0
    for cell, in_cell, rep in zip(cells, cell_points, reps):
        point_seeds = _point_seeds(config, points.is_center, rep)
        for p in in_cell:
            recipe = points.recipes[p]
            for seed in point_seeds[p]:
                rid = run_id_for(config.experiment.name, version, recipe, cell.rung.name, seed, cell.multiplier)
                if rid in seen:
                    duplicates += 1
                    continue
                seen.add(rid)
                runs.append(RunSpec(
                    run_id=rid, experiment=config.experiment.name, design_version=version, recipe=recipe,
                    model_size=cell.rung.name, model_params=cell.params, train_tokens=cell.tokens,
                    train_flops=cell.flops, token_multiplier=cell.multiplier, seed=seed,
                    metadata={"point": p, "center": points.is_center[p], "max_steps": cell.steps,
                              "design_kind": config.design.kind,
                              "coded": {n: round(float(points.coded[p, i]), 6) for i, n in enumerate(names)},
                              "params_total": cell.rung.approx_params, "flops_6nd": cell.flops_6nd,
                              "params_nonembedding": cell.rung.approx_params_nonembedding,
                              "param_count": config.design.param_count,
                              "learning_rate": float((learning_rates or {}).get(cell.rung.name,
                                                                                cell.rung.learning_rate)),
                              **({"tokens_per_param": cell.multiplier}
                                 if config.design.tokens_per_param is not None else {})}))
    return runs, duplicates


def _split(config: ExperimentConfig, runs: list[RunSpec], top: _CellPlan) -> tuple[list[RunSpec], _Split]:
    """Set each run's split by :func:`grid.split.heldout_mask` on planned FLOPs; check the extrapolation factor."""
    spec = config.design
    f = spec.heldout_fraction
    rule = SPLIT_RULE.format(fraction=f)
    mask = heldout_mask([r.train_flops for r in runs], f) if f > 0 else [False] * len(runs)
    runs = [r.model_copy(update={"split": "heldout" if m else "fit",
                                 "metadata": {**r.metadata, "split_rule": rule}}) for r, m in zip(runs, mask)]
    if f <= 0:
        return runs, _Split(rule=rule, factor=None)
    fit_flops = [r.train_flops for r in runs if r.split == "fit"]
    held_flops = [r.train_flops for r in runs if r.split == "heldout"]
    if not fit_flops:
        raise DesignError(f"every run is held out by rule {rule} (ties at the top FLOPs); add a smaller rung "
                          f"or token multiplier")
    factor = max(held_flops) / max(fit_flops)
    factor_6nd = (max(r.metadata["flops_6nd"] for r in runs if r.split == "heldout")
                  / max(r.metadata["flops_6nd"] for r in runs if r.split == "fit"))
    if factor < spec.min_extrapolation_factor - 1e-9:
        if spec.tokens_per_param is not None:
            hint = (f"widen rung {top.rung.name!r} (at a fixed tokens-per-parameter multiple FLOPs grow about as N^2, "
                    f"less while attention dominates: N x {math.sqrt(spec.min_extrapolation_factor / factor):.3g} or "
                    "more) or shrink the fitted rungs")
        else:
            need = math.ceil(top.rung.max_steps * spec.min_extrapolation_factor / factor)
            hint = f"raise rung {top.rung.name!r} max_steps to >= {need} (or add a larger rung / token multiplier)"
        raise DesignError(
            f"held-out runs reach only {factor:.3g}x the largest fitted run's FLOPs, below "
            f"design.min_extrapolation_factor = {spec.min_extrapolation_factor:g}; {hint}")
    return runs, _Split(rule=rule, factor=factor, factor_6nd=factor_6nd)


def _cell_rows(cells: list[_CellPlan], runs: list[RunSpec]) -> list[Cell]:
    """The cells as reported, with their run count and split (``fit``, ``heldout``, ``mixed`` or ``none``)."""
    rows = []
    for c in cells:
        in_cell = [r for r in runs if r.model_size == c.rung.name and r.token_multiplier == c.multiplier]
        splits = {r.split for r in in_cell}
        rows.append(Cell(model_size=c.rung.name, token_multiplier=c.multiplier, model_params=c.params,
                         max_steps=c.steps, train_tokens=c.tokens, train_flops=c.flops, runs=len(in_cell),
                         split=splits.pop() if len(splits) == 1 else ("mixed" if splits else "none")))
    return rows


def build_design(config: ExperimentConfig, learning_rates: dict[str, float] | None = None) -> Design:
    """Plan every run of the experiment: points x cells x seeds, with the held-out split.

    Parameters
    ----------
    config : the validated experiment config (axes, ladder, design, experiment seeds).
    learning_rates : peak learning rate per rung (a learning-rate scan's rule, ``toolscale lr-scan``);
        recorded in each run's ``metadata.learning_rate`` and part of the design version. None: each
        rung's own ``learning_rate``.

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
        less than ``design.min_extrapolation_factor`` above the fitted ones (the message names the
        factor reached), or a run planned above ``train.max_epochs`` passes over its tasks (named).

    Notes
    -----
    Planned FLOPs count attention and the unembedding (Kaplan et al. 2020, Table 1;
    :func:`toolscale.config.model_flops`): ``C = 6 D (N + L n_ctx d + V d)`` with ``N`` the rung's non-embedding
    parameters, ``n_ctx`` the mean training sequence (``design.tokens_per_sequence``, else ``max_seq_len``) and
    ``D = steps x batch_size x`` that length; ``6 N D`` is recorded beside (``metadata.flops_6nd``,
    ``extrapolation_factor_6nd``). The split and the extrapolation factor use the full count. The top-FLOPs cell is crossed with ``K`` points, ``K`` the smallest count for
    which it makes up the held-out share ``f`` of the runs:
    ``K = ceil(f / (1 - f) x other_runs / replicates)``.
    """
    config.require_ladder("grid design")
    version = design_version(config, learning_rates)
    unknown = sorted(set(learning_rates or {}) - {m.name for m in config.ladder})
    if unknown:
        raise DesignError(f"learning rates given for unknown rungs {unknown}")
    points = _plan_points(config)
    cells, top, cell_points = _crossing(config, _cells(config), points)
    runs, duplicates = _expand_runs(config, version, cells, cell_points, points, learning_rates)
    _check_epochs(config, runs)
    _check_checkpoints(config, runs)
    runs, split = _split(config, runs, cells[top])
    rows = _cell_rows(cells, runs)
    summary = _summary(config, version, points=points, runs=runs, cells=rows, split=split, duplicates=duplicates)
    return Design(experiment=config.experiment.name, version=version, kind=config.design.kind, runs=runs,
                  points=points.recipes, cells=rows, alias=points.alias, summary=summary)


def planned_epochs(run: RunSpec, batch_size: int) -> float | None:
    """Passes over the run's tasks its steps plan: ``max_steps x batch_size / task_count`` (None without a
    ``task_count`` axis). An upper bound on sequences per task: the judge filter keeps a few fewer rows."""
    tasks = run.recipe.get("task_count")
    if not tasks:
        return None
    return int(run.metadata["max_steps"]) * batch_size / float(tasks)


def _check_epochs(config: ExperimentConfig, runs: list[RunSpec]) -> None:
    """DesignError naming the runs planned above ``train.max_epochs`` (before anything trains)."""
    limit = config.train.max_epochs
    if limit is None:
        return
    sizes = {m.name: m for m in config.ladder}
    over = []
    for r in runs:
        e = planned_epochs(r, sizes[r.model_size].batch_size)
        if e is not None and e > limit + 1e-9:
            over.append((e, r))
    if over:
        over.sort(key=lambda t: -t[0])
        e, r = over[0]
        raise DesignError(
            f"{len(over)} run(s) plan more than train.max_epochs = {limit:g} passes over their tasks, the most "
            f"run {r.run_id} ({r.model_size}, {r.metadata['max_steps']} steps x "
            f"{sizes[r.model_size].batch_size} over task_count {r.recipe['task_count']:g}: {e:.2f} epochs); "
            "raise the task_count axis's min or plan fewer tokens")


def _check_checkpoints(config: ExperimentConfig, runs: list[RunSpec]) -> None:
    """DesignError naming a run with fewer steps than ``[eval] checkpoints`` (before anything trains)."""
    k = config.eval.checkpoints if config.eval.validation is not None else 0
    spacing = config.eval.checkpoint_spacing
    need = min_kept_steps(k, spacing)
    short = [r for r in runs if int(r.metadata["max_steps"]) < need]
    if short:
        r = min(short, key=lambda r: int(r.metadata["max_steps"]))
        rule = f"eval.checkpoints = {k}" + ("" if spacing == "linear" else f" ({spacing}-spaced: {need} steps)")
        raise DesignError(f"{len(short)} run(s) train fewer steps than {rule}, the fewest run "
                          f"{r.run_id} ({r.model_size}, {r.metadata['max_steps']} steps); keep fewer checkpoints "
                          "or plan more tokens")


def _estimated_cost(config: ExperimentConfig, runs: list[RunSpec]) -> EstimatedCost:
    """Data cost per distinct (recipe, seed) dataset (the one cost model, :func:`grid.cost.cost_model_from_config`:
    ``cost_scales_with`` and quality baselines as ``allocate`` charges them) plus compute per run (its planned
    FLOPs at ``cost.per_pflop``), rounded to cents."""
    from grid.cost import COMPUTE, cost_model_from_config

    model = cost_model_from_config(config)
    datasets = {(json.dumps(r.recipe, sort_keys=True), r.seed) for r in runs}
    data_cost = 0.0
    for recipe_json, _ in datasets:
        spend = model.spend(json.loads(recipe_json), model_params=0.0)
        data_cost += float(sum(v for k, v in spend.items() if k != COMPUTE))
    compute_cost = sum(config.cost.per_pflop * (r.train_flops or 0.0) / 1e15 for r in runs)
    return EstimatedCost(unit=config.experiment.budget_unit, data=round(data_cost, 2),
                         compute=round(compute_cost, 2), total=round(data_cost + compute_cost, 2))


def ladder_statement(fitted_sizes: int) -> str:
    """What ``fitted_sizes`` distinct fitted model sizes let ``fit`` check before the held-out rung."""
    if fitted_sizes >= 3:
        return (f"{fitted_sizes} fitted sizes: `fit --law auto` can fit all but the largest, predict it, and carry "
                "that error into the intervals above them")
    if fitted_sizes == 2:
        return ("2 fitted sizes: too few to check a prediction one rung up, so intervals above them carry no "
                "extrapolation error; add a third fitted rung (fit/README.md, Known limits)")
    if fitted_sizes == 1:
        return "1 fitted size: a law with a model-size term cannot be fitted, nor extrapolated in N"
    return "no fitted runs: nothing to fit a law to"


def _summary(config: ExperimentConfig, version: str, *, points: _Points, runs: list[RunSpec], cells: list[Cell],
             split: _Split, duplicates: int) -> DesignSummary:
    names = [a.name for a in config.axes]
    levels = {n: sorted({p[n] for p in points.recipes}) for n in names}
    flops = [r.train_flops for r in runs]
    held = sum(r.split == "heldout" for r in runs)
    sizes = len({r.model_size for r in runs if r.split == "fit"})
    report, res = points.alias, points.alias.resolution
    return DesignSummary(
        experiment=config.experiment.name, design_version=version, kind=config.design.kind, runs=len(runs),
        points=len(points.recipes), center_points=sum(points.is_center), replicates=config.design.replicates,
        datasets=len({(json.dumps(r.recipe, sort_keys=True), r.seed) for r in runs}), levels=levels,
        level_counts={n: len(v) for n, v in levels.items()}, units={a.name: a.unit for a in config.axes},
        resolution=res, resolution_roman=ROMAN.get(res, str(res)) if res is not None else None,
        generators=points.info.get("generators"), gsd_reduction=points.info.get("gsd_reduction"),
        d_efficiency=report.d_efficiency, alias_highlights=report.highlights[:12],
        qd_clear_of_main=report.qd_clear_of_main, qd_statement=report.statement, split_rule=split.rule,
        fit_runs=len(runs) - held, heldout_runs=held, fitted_sizes=sizes, ladder_statement=ladder_statement(sizes),
        heldout_share=round(held / len(runs), 6) if runs else 0.0,
        extrapolation_factor=round(split.factor, 6) if split.factor is not None else None,
        extrapolation_factor_6nd=round(split.factor_6nd, 6) if split.factor_6nd is not None else None,
        min_extrapolation_factor=config.design.min_extrapolation_factor,
        flops_range=[min(flops), max(flops)] if flops else None, cells=cells, constrained_points=points.constrained,
        duplicate_runs_dropped=duplicates, estimated_cost=_estimated_cost(config, runs),
        storage=storage_estimate(config, runs))
