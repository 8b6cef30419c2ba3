"""The cost model the experiment config declares (the pure model, :class:`grid.cost.CostModel`): the one
owner of what a recipe costs, for ``grid design``'s estimate and ``allocate``'s budget alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from toolscale.config import ExperimentConfig, training_flops

__all__ = ["COMPUTE", "AxisCost", "CostModel", "cost_model_from_config"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


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
    ``spend_compute = per_pflop * 6 N D / 1e15 + per_gpu_s * (eval_gpu_s + synth_gpu_s_per_task * tasks)``
    with ``D = tasks * tokens_per_task`` (6 N D training FLOPs, Kaplan et al. 2020): training, the
    evaluation of the trained model, and GPU-hosted synthesis, all GPU time in one ``compute`` line.
    """

    unit: Literal["usd", "gpu_hours"]
    """Budget unit."""
    axes: list[AxisCost]
    """Per-axis costs."""
    per_pflop: float = Field(default=0.0, ge=0)
    """Cost of 1e15 training FLOPs (0: compute not counted)."""
    tokens_per_task: float = Field(default=400.0, gt=0)
    """Training tokens one task adds."""
    tasks_axis: str = "task_count"
    """Axis counting tasks (for compute)."""
    per_gpu_s: float = Field(default=0.0, ge=0)
    """Cost of one GPU-second in the budget unit (prices the two terms below)."""
    eval_gpu_s: float = Field(default=0.0, ge=0)
    """GPU-seconds of evaluating the trained model, once per plan."""
    synth_gpu_s_per_task: float = Field(default=0.0, ge=0)
    """GPU-seconds of self-hosted synthesis per task."""

    def spend(self, levels: Mapping[str, float], model_params: float) -> dict[str, float]:
        """Spend per axis (and ``compute``) in the budget unit."""
        out = {}
        for a in self.axes:
            scale = levels[a.scales_with] if a.scales_with else 1.0
            out[a.name] = a.per_unit * np.maximum(np.asarray(levels[a.name], dtype=float) - a.free_level, 0.0) * scale
        if self.per_pflop > 0 and self.tasks_axis in levels:
            tokens = levels[self.tasks_axis] * self.tokens_per_task
            out[COMPUTE] = self.per_pflop * training_flops(model_params, tokens) / 1e15
        if self.per_gpu_s > 0 and (self.eval_gpu_s > 0 or self.synth_gpu_s_per_task > 0):
            tasks = levels[self.tasks_axis] if self.tasks_axis in levels else 0.0
            gpu = self.per_gpu_s * (self.eval_gpu_s + self.synth_gpu_s_per_task * np.asarray(tasks, dtype=float))
            out[COMPUTE] = out.get(COMPUTE, 0.0) + gpu
        return out

    def total(self, levels: Mapping[str, float], model_params: float) -> float:
        """Total cost in the budget unit."""
        return float(sum(self.spend(levels, model_params).values()))


def cost_model_from_config(config: ExperimentConfig) -> CostModel:
    """``[[axes]].cost_per_unit`` / ``cost_scales_with`` and ``[cost]`` as a :class:`CostModel`.

    Quality axes are charged above their baseline only (``free_level = baseline``): the
    baseline is what the pipeline delivers without extra spend. Diversity axes are charged
    in full (every tool, task and database is bought). Compute counts training (``per_pflop``), the
    evaluation (``eval_gpu_s_per_run``) and GPU-hosted synthesis (``synth_gpu_s_per_task``), the GPU-seconds
    priced at ``gpu_hour_usd`` (or 1 per GPU-hour with ``budget_unit = "gpu_hours"``).
    """
    return CostModel(
        unit=config.experiment.budget_unit,
        axes=[AxisCost(name=a.name, per_unit=a.cost_per_unit, scales_with=a.cost_scales_with,
                       free_level=a.baseline_level if a.kind == "quality" else 0.0) for a in config.axes],
        per_pflop=config.cost.per_pflop, tokens_per_task=config.cost.tokens_per_task,
        per_gpu_s=(config.cost.gpu_hour_cost(unit=config.experiment.budget_unit) or 0.0) / 3600.0,
        eval_gpu_s=config.cost.eval_gpu_s_per_run, synth_gpu_s_per_task=config.cost.synth_gpu_s_per_task)
