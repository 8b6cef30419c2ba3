"""Registry rows -> points and law inputs (imported runs without a config included)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from fit.data import axis_kinds, law_for_runs, points_from_runs
from fit.errors import FitInputError
from toolscale.config import parse_config


def _run(i, recipe, n=1e6, metrics=None, source="design", split="fit"):
    return SimpleNamespace(run_id=f"r{i}", recipe=recipe, model_params=n, train_tokens=2e6, train_flops=6 * n * 2e6,
                           metrics=metrics if metrics is not None else {"b/score": 0.1 * i, "b/loss": 3.0 - 0.1 * i},
                           source=source, split=split, model_size=f"{n:g}", metadata={"token_multiplier": 1.0})


def test_points_carry_inputs_split_groups_and_label():
    runs = [_run(0, {"x": 1.0}), _run(1, {"x": 1.0}), _run(2, {"x": 2.0}, split="heldout", source="simulated"),
            _run(3, {"x": 2.0}, metrics={})]
    pts = points_from_runs(runs, benchmark="b", inputs=["N", "x", "C"], experiment="e")
    assert pts.n == 3 and pts.y == [0.0, 0.1, 0.2] and pts.inputs["x"] == [1.0, 1.0, 2.0]
    assert pts.inputs["C"][0] == pytest.approx(1.2e13) and pts.split == ["fit", "fit", "heldout"]
    assert pts.groups[0] == pts.groups[1] != pts.groups[2]  # same recipe and size: replicates
    assert pts.simulated  # one simulated run labels the data
    loss = points_from_runs(runs, benchmark="b", metric="loss", inputs=["N", "D"])
    assert loss.target == "loss" and loss.y[0] == 3.0


def test_missing_metric_lists_what_is_there():
    with pytest.raises(FitInputError, match="no done run has metric 'c/score'; metrics present: b/loss, b/score"):
        points_from_runs([_run(1, {"x": 1.0})], benchmark="c", inputs=["N"])


def test_missing_input_names_the_run():
    r = _run(1, {"x": 1.0})
    r.model_params = None
    with pytest.raises(FitInputError, match="run r1 has no value for input 'N'"):
        points_from_runs([r], benchmark="b", inputs=["N"])


def test_runs_with_and_without_a_standard_error_name_a_remedy_that_works():
    # "re-import without --weight" changed nothing: a re-import applies a changed standard error only with --update
    with_err, without = _run(1, {"x": 1.0}), _run(2, {"x": 2.0})
    with_err.stderrs, without.stderrs = {"b/score": 0.01}, {}
    with pytest.raises(FitInputError, match=r"run r2 has no standard error for b/score while others do; .*--update"):
        points_from_runs([with_err, without], benchmark="b", inputs=["N"])


def test_axis_kinds_from_config_or_inferred():
    runs = [_run(0, {"tools": 4.0, "repair_rate": 0.0, "z": 0.0}), _run(1, {"tools": 8.0, "repair_rate": 1.0, "z": 2.0})]
    inferred = axis_kinds(None, runs)
    assert inferred["tools"]["kind"] == "diversity" and inferred["repair_rate"]["kind"] == "quality"
    assert inferred["z"]["kind"] == "quality"  # a level <= 0 cannot be a power-law ratio
    tools = {"name": "tools", "kind": "quality", "unit": "tools", "min": 1, "max": 9, "spacing": "linear"}
    cfg = parse_config({"experiment": {"name": "e"}, "axes": [tools], "ladder": [{"name": "s"}]})
    assert axis_kinds(cfg, runs) == {"tools": {"kind": "quality", "min": 1.0, "max": 9.0}}


def test_law_for_runs_normalises_by_design_ranges():
    runs = [_run(0, {"tools": 4.0, "repair_rate": 0.0}, n=2e5), _run(1, {"tools": 8.0, "repair_rate": 1.0}, n=1e6)]
    law = law_for_runs("additive", runs)
    by = {i.name: i for i in law.inputs}
    assert by["N"].ref == 2e5 and by["tools"].ref == 4.0 and (by["repair_rate"].lo, by["repair_rate"].hi) == (0, 1)
    with pytest.raises(FitInputError, match="unknown axis 'nope'"):
        law_for_runs("additive", runs, axes=["nope"])
    # chinchilla takes the data axes as multipliers of effective data; without axes it is the published form
    with_axes = law_for_runs("chinchilla", runs)
    assert with_axes.axes == ("N", "D", "tools", "repair_rate") and "c_tools" in with_axes.param_names
    assert law_for_runs("chinchilla", runs, axes=[]).axes == ("N", "D")
    assert law_for_runs("effective", runs).target == "score"


def test_runs_are_selected_by_their_training_stages():
    from types import SimpleNamespace

    from fit.data import runs_with_stages, train_stages_of

    sft = SimpleNamespace(metadata={"stages": {"sft": {}}})
    rl = SimpleNamespace(metadata={"stages": {"grpo": {}, "sft": {}}})  # stored JSON sorts keys
    old = SimpleNamespace(metadata={})
    assert train_stages_of(rl) == ["sft", "grpo"] and train_stages_of(old) == ["sft"]
    assert runs_with_stages([sft, rl, old], ["sft"]) == [sft, old]
    assert runs_with_stages([sft, rl, old], ["sft", "grpo"]) == [rl]
