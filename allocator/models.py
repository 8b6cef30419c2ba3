"""Contracts of the allocator: budgets, requests, plans. Imports only pydantic and the standard library."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Unit", "UNITS", "Budget", "AxisCost", "CostModel", "COMPUTE", "AxisBounds", "AllocationRequest", "Plan", "Optimality", "AllocationPlan"]

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
    """Cost of one axis: ``per_unit * level * level[scales_with]``, in the budget unit."""

    name: str
    """Axis name."""
    per_unit: float = Field(ge=0)
    """Cost of one unit of the axis' level."""
    scales_with: str | None = None
    """Axis whose level multiplies this one's cost (per-task costs)."""


class CostModel(_Frozen):
    """Costs of every axis plus optional training compute, in ``unit``.

    Notes
    -----
    ``spend_i = per_unit_i * x_i * x_j`` (``x_j`` = level of ``scales_with``, else 1), and
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
            out[a.name] = a.per_unit * levels[a.name] * scale
        if self.per_pflop > 0 and self.tasks_axis in levels:
            out[COMPUTE] = self.per_pflop * 6.0 * model_params * levels[self.tasks_axis] * self.tokens_per_task / 1e15
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


class AllocationPlan(_Frozen):
    """The answer to an :class:`AllocationRequest`."""

    budget: Budget
    """The budget asked about."""
    benchmark: str
    """Target benchmark."""
    model_params: float
    """Parameters N planned for."""
    plan: Plan
    """The recommended plan."""
    interval: tuple[float, float] | None = None
    """90% interval of the plan's predicted score over the fit's bootstrap draws."""
    spend_spread: dict[str, tuple[float, float]] = Field(default_factory=dict)
    """5th-95th percentile of each axis' spend when re-solved per bootstrap draw."""
    baseline: Plan
    """Diversity-only plan at the same budget (quality axes at baseline)."""
    baseline_interval: tuple[float, float] | None = None
    """90% interval of the baseline's predicted score."""
    gain_over_baseline: float
    """``plan.predicted_score - baseline.predicted_score`` (score points)."""
    gain_interval: tuple[float, float] | None = None
    """90% interval of the gain over bootstrap draws."""
    p_beats_baseline: float | None = None
    """Share of bootstrap draws in which the plan scores above the baseline."""
    marginal_value: dict[str, float]
    """What the next budget unit buys: score points per unit of budget spent on each axis."""
    optimality: Optimality
    """The optimality check."""
    extrapolation: bool
    """True when the plan leaves the range the law was fitted on."""
    extrapolation_detail: dict[str, float] = Field(default_factory=dict)
    """Per axis outside the fitted range: level / fitted max (or fitted min / level)."""
    draws_used: int = 0
    """Bootstrap draws behind the intervals."""
