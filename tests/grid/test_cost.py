"""The cost model a config declares: baseline quality is free, per-task scaling, compute per PFLOP."""

from __future__ import annotations

import tomllib

import pytest

from grid.cost import cost_model_from_config
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config


def _config(**edits):
    data = tomllib.loads(example_config_text("micro"))
    for a in data["axes"]:
        a.update(edits.get(a["name"], {}))
    data["cost"] = {**data.get("cost", {}), **edits.get("cost", {})}
    return parse_config(data)


def test_baseline_quality_costs_nothing_and_diversity_is_paid_in_full() -> None:
    cfg = _config(repair_rate={"baseline": 0.5})
    cost = cost_model_from_config(cfg)
    levels = {"tool_diversity": 4, "task_count": 64, "db_diversity": 1, "repair_rate": 0.5, "coverage_quota": 0.0,
              "support_depth": 1}
    spend = cost.spend(levels, 1e6)
    assert spend["repair_rate"] == 0.0 and spend["support_depth"] == 0.0  # at their baselines
    assert spend["tool_diversity"] == 4 * 150.0 and spend["task_count"] == 64 * 0.8
    assert cost.spend({**levels, "repair_rate": 1.0}, 1e6)["repair_rate"] == pytest.approx(0.5 * 400.0)


def test_cost_scales_with_task_count_and_compute_is_charged_per_pflop() -> None:
    cfg = _config(repair_rate={"cost_per_unit": 2.0, "cost_scales_with": "task_count"},
                  cost={"per_pflop": 3.0, "tokens_per_task": 500.0})
    cost = cost_model_from_config(cfg)
    levels = {"tool_diversity": 4, "task_count": 200, "db_diversity": 1, "repair_rate": 0.5, "coverage_quota": 0.0,
              "support_depth": 1}
    spend = cost.spend(levels, 1e8)
    assert spend["repair_rate"] == pytest.approx(2.0 * 0.5 * 200)  # per repaired task
    assert spend["compute"] == pytest.approx(3.0 * 6 * 1e8 * 200 * 500 / 1e15)
