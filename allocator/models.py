"""Contracts of the allocator: queries, budgets, requests, plans (pydantic, the grid's cost model, the config)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from allocator.errors import AllocatorUsageError
from grid import COMPUTE, AxisCost, CostModel
from toolscale.config import ExperimentConfig

__all__ = ["Unit", "UNITS", "Budget", "AxisCost", "CostModel", "COMPUTE", "AxisBounds", "AllocationRequest",
           "AllocationQuery", "Plan", "Optimality", "Decision", "AllocationPlan", "AllocationReport", "ARMS",
           "VerificationArm", "VerificationReport", "signed_interval", "ProposedRun", "NextRuns", "EarlierInterval"]

Unit = Literal["usd", "gpu_hours"]
UNITS: tuple[str, ...] = ("usd", "gpu_hours")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class Budget(_Frozen):
    """An amount of money or compute."""

    value: float = Field(gt=0, allow_inf_nan=False)
    """Amount, in ``unit``."""
    unit: Unit = "usd"
    """``usd`` (dollars) or ``gpu_hours``."""

    def __str__(self) -> str:
        return f"{self.value:,.0f} {self.unit}" if self.value < 1e15 else f"{self.value:.4g} {self.unit}"


class AxisBounds(_Frozen):
    """What the solver may choose for one axis."""

    name: str
    """Axis name."""
    kind: Literal["diversity", "quality"]
    """Axis kind."""
    unit: str
    """Unit of the level."""
    lower: float
    """Smallest level the plan may choose (the fitted minimum)."""
    upper: float
    """Largest level the plan may choose (may exceed the fitted range, see ``fitted_max``)."""
    fitted_min: float
    """Smallest level in the data the law was fitted on."""
    fitted_max: float
    """Largest level in the data the law was fitted on."""
    log: bool = True
    """Search in log space (log-spaced axes)."""
    baseline: float
    """Level a diversity-only plan holds a quality axis at."""
    integer: bool = False
    """Levels are counts: plans round them to feasible integers within the budget."""
    cap: str = ""
    """Why ``upper`` is what it is (the tested maximum times ``max_extrapolation``, a fraction's 1...)."""


class AllocationRequest(_Frozen):
    """One question: the best spend of ``budget`` for ``benchmark`` at a given model size."""

    budget: Budget
    """Total budget."""
    benchmark: str
    """Target benchmark."""
    model_params: float = Field(gt=0)
    """Parameters N of the model the data is for."""
    axes: list[AxisBounds]
    """Axes the plan sets, with bounds."""
    cost: CostModel
    """What levels cost."""
    starts: int = Field(default=12, ge=1)
    """Multi-start count of the optimiser."""
    seed: int = 0
    """Seed of the random starts."""


class AllocationQuery(_Frozen):
    """One ``allocate`` question, built once at the boundary (CLI, MCP tools, ``verify``, ``next``) by :meth:`of` and
    handed whole to :func:`pipeline.allocate.plan_allocation`; ``None`` means the default (see each field)."""

    registry: str
    """Path of the DuckDB registry holding the fit, the runs and (unless ``config`` is given) the config."""
    benchmark: str
    """Target benchmark (one with a stored fit)."""
    unit: Unit | None = None
    """Budget unit, ``usd`` or ``gpu_hours``; None: the experiment's (costs are never converted)."""
    budget: float
    """Total budget, in ``unit``: a finite number > 0."""
    experiment: str | None = None
    """Experiment whose fit to plan from; None: the only one with a fit for ``benchmark``."""
    model_size: str | None = None
    """Model planned for: a ladder rung or a parameter count N (``1.4e9``, ``1.4B``); None: the target rung."""
    tokens: str | float | None = None
    """Training tokens D planned for (``3e11``, ``300B``); None: the rung's (:func:`allocator.planning.plan_target`)."""
    tokens_per_param: float | None = None
    """D as tokens per parameter (D = R x N); not with ``tokens``."""
    law: str | None = None
    """Plan from the newest fit of this law (no other forms mixed in); None: the newest fit."""
    fit_id: str | None = None
    """Plan from this stored fit."""
    draws: int | None = Field(default=None, ge=0)
    """Bootstrap draws of the fit to use (its first ``draws``); None: all stored."""
    redraws: int = Field(default=30, ge=0)
    """Draws re-solved for each axis's spend range and the plan's regret (0: none, as a sweep does)."""
    mix_forms: bool = True
    """Mix the other law forms fitted to the same points into the intervals, by weight."""
    extrapolate: float | None = None
    """How far past its largest tested level an axis may go, a factor >= 1; None: ``[allocate] max_extrapolation``."""
    config: ExperimentConfig | None = None
    """The experiment config (axes, cost model, ladder); None: the one stored with the experiment."""

    @field_validator("unit", mode="before")
    @classmethod
    def _unit(cls, v: Any) -> Any:
        if v is not None and v not in UNITS:
            raise ValueError(f"--unit must be one of {', '.join(UNITS)}, got {v!r}")
        return v

    @field_validator("budget", mode="before")
    @classmethod
    def _budget(cls, v: Any) -> Any:
        if not (isinstance(v, int | float) and math.isfinite(v) and v > 0):
            raise ValueError(f"--budget must be a positive number, got {v}")
        return v

    @field_validator("extrapolate", mode="before")
    @classmethod
    def _extrapolate(cls, v: Any) -> Any:
        if v is not None and not (isinstance(v, int | float) and math.isfinite(v) and v >= 1.0):
            raise ValueError(f"--extrapolate must be a factor >= 1 (how far past the tested range), got {v}")
        return v

    @classmethod
    def of(cls, **fields: Any) -> AllocationQuery:
        """The query, else :class:`AllocatorUsageError` (exit 2) naming the first bad field and its value, one line."""
        try:
            return cls(**fields)
        except ValidationError as err:
            e = err.errors()[0]
            msg = e["msg"].removeprefix("Value error, ")
            if e["type"] != "value_error":
                msg = f"{'.'.join(str(p) for p in e['loc'])}: {msg} (got {e.get('input')!r})"
            raise AllocatorUsageError(msg) from None


class Plan(_Frozen):
    """Levels of every axis, what they cost, and what the law predicts."""

    levels: dict[str, float]
    """Level per axis, in the axis' unit."""
    spend: dict[str, float]
    """Cost per axis, in the budget unit (``compute`` included when configured)."""
    total_cost: float
    """Sum of ``spend``, in the budget unit; never above the budget."""
    predicted_score: float
    """Law prediction at these levels (point estimate)."""


class Optimality(_Frozen):
    """The KKT check of a solution: equal marginal score per unit cost across interior axes."""

    marginal_per_cost: dict[str, float]
    """d score / d cost per axis at the solution (score points per budget unit)."""
    interior: list[str]
    """Axes strictly inside their bounds."""
    at_bound: dict[str, str]
    """Axes at a bound, with why (``lower``/``upper`` and the sign of their marginal value)."""
    max_relative_gap: float
    """Largest relative spread of ``marginal_per_cost`` across interior axes (0 = exact optimum)."""
    budget_binding: bool
    """Whether the plan spends (almost) all the budget."""
    ok: bool
    """Whether the conditions hold within tolerance."""


class Decision(_Frozen):
    """Whether the law can tell the recommended plan from the diversity-only baseline at this budget."""

    verdict: Literal["recommend", "no_decision"]
    """``recommend``: the gain is resolved; ``no_decision``: the plans tie within the law's uncertainty or the noise."""
    reason: str
    """One line: why (the gain, its interval, the replicate SD)."""
    tied_axes: list[str] = Field(default_factory=list)
    """With ``no_decision``: the axes on which the two plans differ, i.e. the choice the data cannot make."""


class AllocationPlan(_Frozen):
    """The answer to an :class:`AllocationRequest`.

    Two comparisons: ``baseline`` is what a diversity-only user would do (a law over the
    diversity axes alone, solved for the same budget, quality left as the pipeline delivers
    it); ``pinned`` is the same law as the plan re-solved with the quality axes at their
    baseline (nested in the plan's problem, so its gain is >= 0 by construction). Both are
    scored by the plan's law (point estimate and draws), so the gains compare like with like.
    """

    budget: Budget
    """The budget asked about."""
    benchmark: str
    """Target benchmark."""
    model_params: float
    """Parameters N planned for."""
    plan: Plan
    """The recommended plan."""
    interval: tuple[float, float] | None = None
    """90% predictive interval of one run's score under the plan, as ``predict`` gives it: the draws (bootstrap,
    law forms where mixed) plus a run's noise (the fit's residual SD), the law's extrapolation error above the
    fitted model sizes and past each axis's tested maximum."""
    spend_spread: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """5th-95th percentile of each axis' spend when re-solved per draw."""
    regret_interval: tuple[float, float] | None = None
    """5th and 95th percentiles of what the plan leaves on the table, score points: per re-solved draw, the score
    of the draw's own optimum (continuous, so an upper bound on the best integer plan) minus the draw's score of
    the plan. The upper end is the regret bound, a 95th percentile (:attr:`regret_bound_percentile`); it sees
    parameter uncertainty only, not the law's form or extrapolation error."""
    regret_bound_percentile: int = 95
    """Which percentile of the re-solved draws' regrets ``regret_interval[1]`` is."""
    expected_regret: float | None = None
    """Mean of those regrets over the re-solved draws (score points)."""
    baseline: Plan
    """The fair diversity-only plan at the same budget (see ``baseline_method``), scored by the plan's law."""
    baseline_method: str = "same law, quality pinned at baseline"
    """How the baseline's levels were chosen (which law, fitted on which runs)."""
    baseline_own_prediction: float | None = None
    """What the diversity-only law itself predicts for its plan (what its user would expect), score points."""
    baseline_interval: tuple[float, float] | None = None
    """90% interval of the baseline's predicted score."""
    gain_over_baseline: float
    """``plan.predicted_score - baseline.predicted_score`` (score points)."""
    gain_interval: tuple[float, float] | None = None
    """90% predictive interval of the gain one run of the plan realises over one run of the baseline: the
    draws' gains (with the rung CV's error of differences) plus each arm's own prediction error at its own
    levels (a run's noise, and the extrapolation error past each axis's tested maximum)."""
    expected_gain_interval: tuple[float, float] | None = None
    """90% interval of the expected gain (the mean over seeds of many runs of each plan): ``gain_interval``
    without the runs' noise, each arm's extrapolation error still in. The decision is taken on it (with the
    noise floor of ``replicate_sd``); a realised gain of K seeds per arm spreads by ``2 s^2 / K`` more."""
    p_beats_baseline: float | None = None
    """Share of draws in which one run of the plan scores above one run of the baseline."""
    pinned: Plan | None = None
    """Second comparison: the plan's own law re-solved with quality pinned at baseline (gain >= 0 by construction)."""
    gain_over_pinned: float | None = None
    """``plan.predicted_score - pinned.predicted_score`` (score points)."""
    pinned_gain_interval: tuple[float, float] | None = None
    """90% interval of that gain over the draws."""
    best_observed: Plan | None = None
    """The stronger baseline (DataDecide's single-scale choice): the best recipe observed at the largest fitted
    rung within the budget, scored by the plan's law; None when no observed recipe fits the budget."""
    best_observed_source: str = ""
    """Where ``best_observed`` came from: the rung and cell, its observed value, the runs averaged."""
    best_observed_interval: tuple[float, float] | None = None
    """90% interval of ``best_observed``'s predicted score over the draws."""
    gain_over_best_observed: float | None = None
    """``plan.predicted_score - best_observed.predicted_score`` (score points); the plan must beat it."""
    best_observed_gain_interval: tuple[float, float] | None = None
    """90% interval of that gain over the draws."""
    decision: Decision
    """Whether the gain over ``baseline`` is resolved and the plan beats ``best_observed``, or no decision."""
    replicate_sd: float | None = None
    """The noise floor of a decision, score points: the seed-to-seed SD of one run from the fit's replicates
    (with >= 10 degrees of freedom), else the fit's residual SD; ``decision.reason`` says which."""
    marginal_value: dict[str, float]
    """What the next budget unit buys: score points per unit of budget spent on each axis."""
    optimality: Optimality
    """The optimality check (of the continuous optimum, before integer rounding)."""
    extrapolation: bool
    """True when the plan leaves the range the law was fitted on."""
    extrapolation_detail: dict[str, float] = Field(default_factory=dict)
    """Per axis outside the fitted range: level / fitted max (or fitted min / level)."""
    draws_used: int = 0
    """Draws behind the intervals."""
    law_weights: dict[str, float] = Field(default_factory=dict)
    """Share of the draws each law form contributed (one form: ``{law: 1.0}``); empty without draws."""
    unspent: float = 0.0
    """Budget the plan leaves unspent (``budget - plan.total_cost``), in the budget unit: more would buy
    nothing the caps allow."""
    caps: dict[str, str] = Field(default_factory=dict)
    """Axes the plan holds at their upper limit, and what that limit is."""
    baseline_extrapolation: dict[str, float] = Field(default_factory=dict)
    """The baseline's axes outside the tested range: level / tested max (or tested min / level)."""
    pinned_extrapolation: dict[str, float] = Field(default_factory=dict)
    """The same for the quality-pinned comparison."""
    axis_extrapolation_sd: dict[str, float] = Field(default_factory=dict)
    """Per axis, the law's error per doubling past its tested maximum (score points, log units for a loss):
    refitted without the runs at the axis's top level, predicting them; it widens the intervals of arms that
    go past it."""
    max_extrapolation: float = 1.25
    """How far past an axis's tested range a plan may go (a multiple of its largest tested level)."""


class AllocationReport(AllocationPlan):
    """The answer of ``allocate``: the :class:`AllocationPlan` plus where it came from.

    ``model_dump(mode="json")`` is the contract of ``allocate --json`` and of the MCP
    ``allocate`` tool (``allocate --sweep --json`` lists one per budget). The registry stores the
    :class:`AllocationPlan` part, ``tokens``, ``model_source``, ``tokens_source``; ``allocation_id`` names the row.
    """

    experiment: str
    """Experiment whose fit made the plan."""
    law: str
    """Law of that fit."""
    fit_id: str
    """Registry id of that fit."""
    metric: str
    """Metric the law predicts (``benchmark/metric``)."""
    target: Literal["score", "loss"] = "score"
    """What the metric is. For a ``loss`` (nats per token, bits per byte: lower is better) every
    ``predicted_score``, interval and gain of the plan is in the negated metric (higher is better),
    so a gain is always an improvement; :meth:`metric_value` turns a score back into the metric."""
    simulated: bool = False
    """True when the fit was on simulated runs."""
    allocation_id: str | None = None
    """Registry id of the stored plan (None when not stored, e.g. over MCP)."""
    tokens: float | None = None
    """Training tokens D planned for (laws that read D predict at it; ``None`` for plans made before)."""
    model_source: str = ""
    """Where ``model_params`` came from (``--model-size``, a ladder rung, the config's target size)."""
    tokens_source: str = ""
    """Where ``tokens`` came from (``--tokens``, ``--tokens-per-param``, a rung's or the design's tokens)."""
    size_extrapolation: dict[str, float] = Field(default_factory=dict)
    """``N``/``D`` outside the fitted runs' range: value / fitted max, or fitted min / value (``predict``'s)."""
    earlier: EarlierInterval | None = None
    """The interval before the newest `toolscale next` runs at this budget, once a refit includes them."""

    @property
    def sign(self) -> float:
        """``-1`` for a loss (scores are the negated metric), ``+1`` for a score."""
        return -1.0 if self.target == "loss" else 1.0

    def metric_value(self, score: float) -> float:
        """A plan score in the metric's own unit (a loss positive again)."""
        return self.sign * score

    def metric_interval(self, iv: tuple[float, float] | None) -> tuple[float, float] | None:
        """A score interval in the metric's unit, low to high."""
        return signed_interval(iv, self.sign)


def signed_interval(iv: tuple[float, float] | None, sign: float) -> tuple[float, float] | None:
    """``iv`` times ``sign`` (``-1``: a negated loss back to the loss), low to high; None stays None."""
    if iv is None:
        return None
    a, b = sign * iv[0], sign * iv[1]
    return (min(a, b), max(a, b))


ARMS: tuple[str, ...] = ("allocator", "diversity_only", "equal_spend", "best_observed")
"""The plans ``toolscale verify`` trains: the allocator's, the fair diversity-only one, an equal split, and the best
recipe observed at the largest fitted rung (when one fits the budget)."""


class VerificationArm(_Frozen):
    """One plan of a verification: its recipe, what the law predicted, and what training it gave."""

    name: Literal["allocator", "diversity_only", "equal_spend", "best_observed"]
    """Which plan (see :data:`ARMS`)."""
    label: str
    """How the plan was made, in words."""
    levels: dict[str, float]
    """Level per axis (integer axes rounded within budget), in the axes' units."""
    planned_cost: float
    """Cost of ``levels`` under the cost model, in the budget unit (never above the budget)."""
    predicted_score: float
    """The allocator's law at ``levels`` (point estimate)."""
    predicted_interval: tuple[float, float] | None = None
    """90% interval of that prediction over the law's draws."""
    run_ids: list[str]
    """One training run per seed, in ``seeds`` order."""
    seeds: list[int]
    """Seeds of synthesis and training."""
    realised_scores: list[float | None] = Field(default_factory=list)
    """The benchmark metric of each run (None while a run is not done), per seed."""
    realised_mean: float | None = None
    """Mean over the done runs."""
    realised_ci: tuple[float, float] | None = None
    """90% Student-t interval of the mean over seeds (None with fewer than 2 done runs)."""
    synthesis_cost: float | None = None
    """Mean realised synthesis cost over the done runs, in the budget unit: the cost model priced at the levels
    the pipeline's dataset manifest measured (tools used, tasks synthesised and judged, databases used,
    repair share, coverage, support depth)."""
    run_status: dict[str, str] = Field(default_factory=dict)
    """State of each run."""


class VerificationReport(_Frozen):
    """The output of ``toolscale verify``: realised against predicted scores of the plans at one budget.

    ``model_dump(mode="json")`` is the ``verify --json`` contract. Stored in the registry as a
    verification group: an experiment ``group`` whose design record holds the plans and predictions,
    and whose runs (one per arm and seed, launched like grid runs) hold the realised scores.
    """

    experiment: str
    """Experiment whose fit made the plans."""
    group: str
    """Name of the verification group (an experiment of its own in the registry)."""
    benchmark: str
    """Benchmark scored."""
    metric: str
    """Metric compared (the fitted metric of ``benchmark``)."""
    budget: Budget
    """Budget every plan spends at most."""
    model_size: str
    """Ladder rung trained."""
    model_params: float
    """Parameters N of that rung."""
    law: str
    """Law of the fit that made the plans."""
    fit_id: str
    """Registry id of that fit (the plans themselves are in the group's design record)."""
    simulated: bool = False
    """True when the fit was on simulated runs (its predictions are of a simulated benchmark)."""
    arms: list[VerificationArm]
    """The plans, in :data:`ARMS` order."""
    predicted_gain: float
    """Allocator minus diversity-only, predicted by the law (score points)."""
    predicted_gain_interval: tuple[float, float] | None = None
    """90% interval of the predicted gain."""
    decision: Decision
    """What ``allocate`` said at this budget."""
    realised_gain: float | None = None
    """Allocator minus diversity-only, mean over seeds of the paired per-seed differences (score points)."""
    realised_gain_ci: tuple[float, float] | None = None
    """90% Student-t interval of the realised gain over seeds (None with fewer than 2 paired seeds)."""
    seed_sd: float | None = None
    """SD of one run across seeds at the trained rung, metric units: pooled within the arms' seeds (or the fit's
    noise floor when no arm has two seeds, see ``seed_sd_source``)."""
    seed_sd_source: str = ""
    """Where ``seed_sd`` came from."""
    comparison_interval: tuple[float, float] | None = None
    """What ``realised_gain`` is compared with: ``predicted_gain_interval`` widened by the realised gain's own
    seed noise, variance ``2 s^2 / K`` (K paired seeds), each side added in quadrature at 90%."""
    inside_interval: bool | None = None
    """Whether ``realised_gain`` lies inside ``comparison_interval``; None when either is missing, or when the
    allocator's and the diversity-only plan are one recipe (a gain of exactly 0 proves nothing)."""
    predicted_gain_best_observed: float | None = None
    """Allocator minus the best observed recipe, predicted (score points)."""
    predicted_gain_best_observed_interval: tuple[float, float] | None = None
    """Its 90% interval over the law's draws."""
    realised_gain_best_observed: float | None = None
    """Allocator minus the best observed recipe, realised: mean of the paired per-seed differences."""
    comparison_interval_best_observed: tuple[float, float] | None = None
    """``predicted_gain_best_observed_interval`` widened by ``2 s^2 / K`` as above."""
    inside_interval_best_observed: bool | None = None
    """Whether ``realised_gain_best_observed`` lies inside its comparison interval (None when not comparable)."""
    notes: list[str] = Field(default_factory=list)
    """What the comparison means, in words (e.g. why a check is not counted)."""
    complete: bool
    """True when every run is done."""
    problems: list[str] = Field(default_factory=list)
    """Runs not done, with why."""
    plot: str | None = None
    """Path of the predicted-against-realised plot, when written."""


class ProposedRun(_Frozen):
    """One run ``toolscale next`` proposes, in the order chosen, with what the runs up to it are expected to do."""

    rank: int
    """Order of choice (1 = first); the first K of a proposal of more runs are the proposal of K."""
    recipe: dict[str, float]
    """Level of every data axis, in the axes' units."""
    model_size: str
    """Ladder rung."""
    token_multiplier: float = 1.0
    """Token multiple of the rung (``grid design``'s cells)."""
    seed: int
    """Seed of synthesis and training (a seed whose dataset exists is reused: no data cost)."""
    model_params: float
    """Planned parameters N."""
    train_tokens: float
    """Planned training tokens D."""
    train_flops: float
    """Planned training FLOPs ``6 N D``."""
    new_dataset: bool
    """True when the run needs a dataset synthesised (no run of this recipe and seed exists or is proposed earlier)."""
    data_cost: float
    """Synthesis cost of that dataset (0 when reused), in the budget unit."""
    compute_cost: float
    """Training compute at ``[cost].per_pflop``, in the budget unit."""
    cost: float
    """``data_cost + compute_cost``, in the budget unit."""
    cumulative_cost: float
    """Cost of this run and those ranked before it."""
    predicted: float
    """The law's prediction of the run's metric (point estimate, metric units)."""
    predicted_sd: float
    """SD of that prediction over the law's draws (metric units; log units for a loss)."""
    expected_width_after: float
    """Expected width of the 90% gain interval after this run and those before it (``width_now`` scale)."""
    expected_regret_after: float
    """Expected regret of the plan chosen after them (score points)."""
    p_resolved_after: float
    """Share of simulated outcomes after which the gain's 90% interval lies above 0."""


class NextRuns(_Frozen):
    """The answer of ``toolscale next``: the runs that make the allocation at ``budget`` surest per unit of cost.

    ``model_dump(mode="json")`` is the ``next --json`` and MCP ``next_runs`` contract, and the file
    ``grid design --augment`` reads. Widths and regrets are in score points (a loss negated, as in
    :class:`AllocationReport`). Expected values are over simulated outcomes of the runs (preposterior):
    each simulation draws the truth from the law's draws and the runs' results with the fit's noise,
    and re-weights the draws by the likelihood of those results (importance weights).
    """

    experiment: str
    """Experiment whose fit the proposal is for."""
    benchmark: str
    """Benchmark."""
    metric: str
    """Metric the law predicts."""
    law: str
    """Law of the fit."""
    fit_id: str
    """Registry id of that fit."""
    target: Literal["score", "loss"] = "score"
    """What the metric is (a loss is negated in widths and regrets)."""
    simulated: bool = False
    """True when the fit was on simulated runs."""
    budget: Budget
    """The allocation budget the decision is about."""
    model_params: float
    """Parameters N the allocation plans for."""
    plan_levels: dict[str, float]
    """The allocator's plan at ``budget`` now."""
    baseline_levels: dict[str, float]
    """The fair diversity-only plan it is compared with."""
    gain_over_baseline: float
    """The predicted gain now (score points)."""
    gain_interval: tuple[float, float] | None = None
    """Its 90% interval now (``allocate``'s)."""
    decision: Decision
    """``allocate``'s decision now."""
    width_now: float
    """Width of ``gain_interval`` (score points)."""
    expected_regret_now: float
    """Expected regret of the plan now over the draws (score points; see ``criterion``)."""
    runs: list[ProposedRun]
    """The proposed runs, in the order chosen."""
    total_cost: float
    """Cost of all proposed runs, in the budget unit."""
    max_cost: float | None = None
    """The cap on ``total_cost`` asked for (None: none)."""
    expected_width_after: float
    """Width of the 90% gain interval expected after all proposed runs (:func:`allocator.proposal.width_after`)."""
    width_floor: float = 0.0
    """The part of ``width_now`` no run removes: a run's noise per arm, the error past tested maxima (score points)."""
    expected_regret_after: float
    """Expected regret after all proposed runs (score points)."""
    p_resolved_after: float
    """Share of simulated outcomes after which the gain's 90% interval lies above 0."""
    criterion: str
    """How runs were chosen, in words."""
    candidates: int
    """Candidate runs considered (recipes x cells)."""
    draws: int
    """Law draws the criterion re-weights."""
    simulations: int
    """Simulated outcomes per candidate batch."""
    mean_ess: float
    """Mean effective sample size of the untempered importance weights after all proposed runs (of ``draws``)."""
    cost_rule: str
    """How a run's cost was counted, in words."""
    notes: list[str] = Field(default_factory=list)
    """Anything the proposal could not do as asked (fewer runs under ``max_cost``, a subsampled space...)."""

    def rows(self) -> list[dict]:
        """The proposal rows ``grid.augment.augment_runs`` reads."""
        return [{"recipe": r.recipe, "model_size": r.model_size, "token_multiplier": r.token_multiplier,
                 "seed": r.seed} for r in self.runs]


class EarlierInterval(_Frozen):
    """What ``allocate`` said before the runs a ``toolscale next`` proposal added (shown beside the new interval)."""

    group: str
    """The augmentation group (``grid design --augment``) holding those runs."""
    fit_id: str
    """The fit the proposal was made from."""
    runs: int
    """Runs of the group."""
    runs_done: int
    """Of those, done (and so in a refit)."""
    gain_over_baseline: float
    """The gain predicted then (score points)."""
    gain_interval: tuple[float, float] | None = None
    """Its 90% interval then."""
    expected_width_after: float
    """The width the proposal expected after its runs (score points)."""
    decision: str
    """The verdict then (``recommend`` or ``no_decision``)."""
