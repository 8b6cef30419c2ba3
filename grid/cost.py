"""The cost model the experiment config declares (the pure model, :class:`grid.models.CostModel`): the one
owner of what a recipe costs, for ``grid design``'s estimate and ``allocate``'s budget alike."""

from __future__ import annotations

from grid.models import AxisCost, CostModel
from toolscale.config import ExperimentConfig

__all__ = ["cost_model_from_config"]


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
