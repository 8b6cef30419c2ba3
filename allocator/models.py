"""Contracts of the allocator: budgets, requests, plans. Imports only pydantic, numpy, the standard library and
the config contract (for the one training-FLOPs rule)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolscale.config import training_flops

__all__ = ["Unit", "UNITS", "Budget", "AxisCost", "CostModel", "COMPUTE", "AxisBounds", "AllocationRequest", "Plan",
           "Optimality", "Decision", "AllocationPlan", "AllocationReport", "ARMS", "VerificationArm", "VerificationReport",
           "signed_interval"]

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
        return f"{self.value:,.0f} {self.unit}"


COMPUTE = "compute"
"""Spend key of training compute."""


class AxisCost(_Frozen):
    """Cost of one axis: ``per_unit * max(level - free_level, 0) * level[scales_with]``, in the budget unit."""

    name: str
    """Axis name."""
    per_unit: float = Field(ge=0)
    """Cost of one unit of the axis' level above ``free_level``."""
    scales_with: str | None = None
    """Axis whose level multiplies this one's cost (per-task costs, e.g. ``task_count``)."""
    free_level: float = 0.0
    """Level that costs nothing (a quality axis' baseline: what the pipeline delivers anyway), in the axis' unit."""


class CostModel(_Frozen):
    """Costs of every axis plus optional training compute, in ``unit``.

    Notes
    -----
    ``spend_i = per_unit_i * max(x_i - free_i, 0) * x_j`` (``x_j`` = level of ``scales_with``, else 1;
    ``free_i`` = the axis' ``free_level``: quality is charged above its baseline only), and
    ``spend_compute = per_pflop * 6 N D / 1e15`` with ``D = tasks * tokens_per_task``
    (6 N D training FLOPs, Kaplan et al. 2020).
    """

    unit: Unit
    """Budget unit."""
    axes: list[AxisCost]
    """Per-axis costs."""
    per_pflop: float = Field(default=0.0, ge=0)
    """Cost of 1e15 training FLOPs (0: compute not counted)."""
    tokens_per_task: float = Field(default=400.0, gt=0)
    """Training tokens one task adds."""
    tasks_axis: str = "task_count"
    """Axis counting tasks (for compute)."""

    def spend(self, levels: Mapping[str, float], model_params: float) -> dict[str, float]:
        """Spend per axis (and ``compute``) in the budget unit."""
        out = {}
        for a in self.axes:
            scale = levels[a.scales_with] if a.scales_with else 1.0
            out[a.name] = a.per_unit * np.maximum(np.asarray(levels[a.name], dtype=float) - a.free_level, 0.0) * scale
        if self.per_pflop > 0 and self.tasks_axis in levels:
            tokens = levels[self.tasks_axis] * self.tokens_per_task
            out[COMPUTE] = self.per_pflop * training_flops(model_params, tokens) / 1e15
        return out

    def total(self, levels: Mapping[str, float], model_params: float) -> float:
        """Total cost in the budget unit."""
        return float(sum(self.spend(levels, model_params).values()))


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
    """90% interval of what the plan leaves on the table, score points: per re-solved draw, the score of the
    draw's own optimum (continuous, so an upper bound on the best integer plan) minus the draw's score of the
    plan. Small against the gain: more runs would not move the plan by much."""
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
    decision: Decision
    """Whether the gain over ``baseline`` is resolved, or the plans tie at this budget."""
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
    ``allocate`` tool (``allocate --sweep --json`` lists one per budget). The registry stores
    the :class:`AllocationPlan` part; ``allocation_id`` names that row.
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
    """Where ``tokens`` came from (``--tokens``, ``--tokens-per-param``, a rung's planned tokens, the design's
    tokens per parameter)."""

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


ARMS: tuple[str, ...] = ("allocator", "diversity_only", "equal_spend")
"""The plans ``toolscale verify`` trains: the allocator's, the fair diversity-only one, and an equal split."""


class VerificationArm(_Frozen):
    """One plan of a verification: its recipe, what the law predicted, and what training it gave."""

    name: Literal["allocator", "diversity_only", "equal_spend"]
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
    inside_interval: bool | None = None
    """Whether ``realised_gain`` lies inside ``predicted_gain_interval`` (None when either is missing)."""
    complete: bool
    """True when every run is done."""
    problems: list[str] = Field(default_factory=list)
    """Runs not done, with why."""
    plot: str | None = None
    """Path of the predicted-against-realised plot, when written."""
