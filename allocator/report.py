"""The JSON shape of an allocation, shared by ``allocate --json`` and the MCP ``allocate`` tool."""

from __future__ import annotations

from typing import Any

from allocator.models import AllocationPlan

__all__ = ["plan_json"]


def plan_json(plan: AllocationPlan, context: dict[str, Any]) -> dict[str, Any]:
    """The JSON contract of ``allocate --json`` and of the MCP ``allocate`` tool.

    ``context`` is the second value of :func:`allocator.service.plan_allocation`
    (experiment, fit id, law, simulated, metric, and the stored allocation id if any).
    """
    return {
        "budget": plan.budget.value, "unit": plan.budget.unit, "benchmark": plan.benchmark,
        "experiment": context["experiment"], "law": context["law"], "fit_id": context["fit_id"],
        "simulated": context["simulated"], "metric": context["metric"], "model_params": plan.model_params,
        "spend": plan.plan.spend, "levels": plan.plan.levels, "total_cost": plan.plan.total_cost,
        "predicted_score": plan.plan.predicted_score, "interval": plan.interval,
        "spend_spread": plan.spend_spread, "marginal_value": plan.marginal_value,
        "baseline": {"spend": plan.baseline.spend, "levels": plan.baseline.levels,
                     "predicted_score": plan.baseline.predicted_score, "interval": plan.baseline_interval,
                     "method": plan.baseline_method, "own_prediction": plan.baseline_own_prediction},
        "gain_over_baseline": plan.gain_over_baseline, "gain_interval": plan.gain_interval,
        "pinned": plan.pinned.model_dump(mode="json") if plan.pinned else None,
        "gain_over_pinned": plan.gain_over_pinned, "pinned_gain_interval": plan.pinned_gain_interval,
        "decision": plan.decision.model_dump(mode="json"), "replicate_sd": plan.replicate_sd,
        "law_weights": plan.law_weights,
        "p_beats_baseline": plan.p_beats_baseline, "extrapolation": plan.extrapolation,
        "extrapolation_detail": plan.extrapolation_detail, "optimality": plan.optimality.model_dump(),
        "draws_used": plan.draws_used, "allocation_id": context.get("allocation_id")}
