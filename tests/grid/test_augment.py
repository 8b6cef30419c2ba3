"""The candidate space of `toolscale next` and the rows `grid design --augment` adds (grid/augment.py)."""

from __future__ import annotations

import math
import tomllib

import pytest

from grid.augment import augment_group, augment_runs, candidate_cells, candidate_recipes, record_augment
from grid.design import build_design
from grid.errors import DesignError
from grid.models import AUGMENT_KIND
from grid.planner import record_design
from grid.registry import Registry
from toolscale.cli.project import example_config_text
from toolscale.config import parse_config


def _config(preset: str = "default"):
    return parse_config(tomllib.loads(example_config_text(preset)))


def test_cells_are_every_rung_as_the_design_plans_them() -> None:
    cfg = _config()
    cells = candidate_cells(cfg)
    assert [c.model_size for c in cells] == [m.name for m in cfg.ladder]  # fitted rungs and the held-out one above
    design = {(r.model_size, r.token_multiplier): r for r in build_design(cfg).runs}
    for c in cells:
        r = design[(c.model_size, c.token_multiplier)]
        assert (c.model_params, c.train_tokens, c.train_flops) == (r.model_params, r.train_tokens, r.train_flops)
        assert c.max_steps == r.metadata["max_steps"]


def test_recipes_are_the_levels_full_factorial_within_the_constraints() -> None:
    cfg = _config()
    recipes, sub = candidate_recipes(cfg)
    assert not sub and len(recipes) <= math.prod(a.levels for a in cfg.axes) == 2304
    assert all(r["task_count"] >= r["tool_diversity"] for r in recipes)  # the preset's constraint
    assert {r["support_depth"] for r in recipes} == {1.0, 2.0, 3.0, 4.0}
    extra, _ = candidate_recipes(cfg, [{"tool_diversity": 99.4, "task_count": 700.2, "db_diversity": 0.2,
                                        "repair_rate": 0.3, "coverage_quota": 0.05, "support_depth": 2.6}])
    assert extra[-1] == {"tool_diversity": 40.0, "task_count": 700.0, "db_diversity": 1.0, "repair_rate": 0.3,
                         "coverage_quota": 0.05, "support_depth": 3.0}  # clipped to the ranges, integers rounded
    few, sub = candidate_recipes(cfg, limit=100)
    assert sub and len(few) <= 100


def _rows(cfg):
    recipe = {a.name: a.min for a in cfg.axes}
    return [{"recipe": recipe, "model_size": cfg.ladder[-1].name, "token_multiplier": 1.0, "seed": 7},
            {"recipe": recipe, "model_size": cfg.ladder[0].name, "token_multiplier": 1.0, "seed": 7}]


def test_augment_runs_are_pending_fitted_rows_of_their_own_group() -> None:
    cfg = _config()
    runs = augment_runs(cfg, _rows(cfg))
    group = augment_group(_rows(cfg))
    assert group.startswith("next-") and {r.design_version for r in runs} == {group}
    assert {r.split for r in runs} == {"fit"} and runs[0].seed == 7
    assert runs[0].metadata["max_steps"] == cfg.ladder[-1].max_steps and runs[0].metadata["group"] == group
    assert runs[0].run_id != runs[1].run_id and augment_runs(cfg, _rows(cfg))[0].run_id == runs[0].run_id


@pytest.mark.parametrize(("change", "needle"), [
    ({"model_size": "giant"}, "rung 'giant' x tokens 1 is not a cell of this config"),
    ({"token_multiplier": 3.0}, "x tokens 3 is not a cell"),
    ({"recipe": {"tool_diversity": 4.0}}, "are not the config's"),
    ({"recipe_over": ("task_count", 5000.0)}, "task_count = 5000 is outside its range 64..1024"),
])
def test_bad_rows_are_refused_naming_the_value(change, needle) -> None:
    cfg = _config()
    row = dict(_rows(cfg)[0])
    if "recipe_over" in change:
        name, value = change.pop("recipe_over")
        row["recipe"] = {**row["recipe"], name: value}
    row.update(change)
    with pytest.raises(DesignError, match=needle):
        augment_runs(cfg, [row])
    with pytest.raises(DesignError, match="no runs to add"):
        augment_runs(cfg, [])


def test_record_augment_is_idempotent_and_leaves_the_design_recordable(tmp_path) -> None:
    cfg = _config("micro")
    path = str(tmp_path / "r.duckdb")
    runs = augment_runs(cfg, _rows(cfg))
    with Registry(path) as reg:
        with pytest.raises(DesignError, match="record its design first"):
            record_augment(reg, cfg, runs, {"experiment": cfg.experiment.name})
        record_design(reg, build_design(cfg), cfg)
        assert record_augment(reg, cfg, runs, {"experiment": cfg.experiment.name}) == (True, 2)
        assert record_augment(reg, cfg, runs, {"experiment": cfg.experiment.name}) == (False, 0)
        again = record_design(reg, build_design(cfg), cfg)  # the group is not another design version
        assert again.new_runs == 0 and not again.other_versions
        stored = [r for r in reg.runs(cfg.experiment.name) if r.source == AUGMENT_KIND]
        assert len(stored) == 2 and {r.status for r in stored} == {"pending"}
        assert reg.designs(cfg.experiment.name)[-1]["summary"]["kind"] == AUGMENT_KIND
