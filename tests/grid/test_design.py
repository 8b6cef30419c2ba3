"""grid/design.py: build_design over axes x ladder, the split, versions, presets and bad input."""

from __future__ import annotations

import copy
import json
import math
import tomllib
from importlib import resources

import pytest

from grid.design import build_design, design_version
from grid.errors import DesignError
from grid.split import heldout_mask
from toolscale.config import parse_config

AXES = [
    {"name": "tool_diversity", "kind": "diversity", "unit": "tools", "min": 4, "max": 32, "integer": True},
    {"name": "task_count", "kind": "diversity", "unit": "tasks", "min": 64, "max": 512, "integer": True},
    {"name": "repair_rate", "kind": "quality", "unit": "fraction", "min": 0.0, "max": 1.0, "spacing": "linear"},
    {"name": "support_depth", "kind": "quality", "unit": "hops", "min": 1, "max": 4, "spacing": "linear",
     "integer": True},
]
LADDER = [
    {"name": "s", "hidden_size": 32, "num_layers": 1, "vocab_size": 256, "max_seq_len": 64, "max_steps": 10},
    {"name": "l", "hidden_size": 64, "num_layers": 2, "vocab_size": 256, "max_seq_len": 64, "max_steps": 60},
]


def cfg(design: dict | None = None, axes: list | None = None, ladder: list | None = None, evals: dict | None = None,
        **experiment):
    return parse_config({"experiment": {"name": "t", **experiment}, "axes": axes or AXES,
                         "ladder": ladder or LADDER, "design": {"kind": "fractional", **(design or {})},
                         "eval": evals or {}})


def preset(name: str):
    text = resources.files("toolscale.presets").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return parse_config(tomllib.loads(text))


def test_planned_n_d_flops_and_split():
    c = cfg({"center_points": 1})
    d = build_design(c)
    assert d.summary.resolution == 4 and d.summary.points == 9  # 2^(4-1) IV + 1 center
    for r in d.runs:
        size = c.model_size(r.model_size)
        assert r.model_params == size.approx_params
        assert r.train_tokens == size.planned_tokens * r.token_multiplier
        # attention and the unembedding counted; 6 N D beside it
        assert r.train_flops == pytest.approx(size.real_flops(r.train_tokens))
        assert r.metadata["flops_6nd"] == pytest.approx(6 * r.model_params * r.train_tokens)
        assert r.design_version == d.version and r.metadata["split_rule"] == "top-flops:0.25"
    assert [r.split == "heldout" for r in d.runs] == heldout_mask([r.train_flops for r in d.runs], 0.25)
    # 9 points on s; l gets ceil(1/3 * 9) = 3 points, exactly the held-out quarter
    assert [(cell.model_size, cell.runs, cell.split) for cell in d.cells] == [("s", 9, "fit"), ("l", 3, "heldout")]
    assert d.summary.heldout_runs == 3 and d.summary.fit_runs == 9
    assert len({r.run_id for r in d.runs}) == len(d.runs)


def test_extrapolation_factor_is_computed_from_flops():
    d = build_design(cfg())
    s, l = cfg().ladder
    expected = l.real_flops(l.planned_tokens) / s.real_flops(s.planned_tokens)
    assert d.summary.extrapolation_factor == pytest.approx(expected, rel=1e-5)
    six = (l.approx_params * l.planned_tokens) / (s.approx_params * s.planned_tokens)
    assert d.summary.extrapolation_factor_6nd == pytest.approx(six, rel=1e-5)
    assert expected >= 16


def test_too_small_extrapolation_is_an_error_naming_the_fix():
    ladder = copy.deepcopy(LADDER)
    ladder[1]["max_steps"] = 20
    with pytest.raises(DesignError, match=r"only \d.*x the largest fitted.*raise rung 'l' max_steps to >= \d+"):
        build_design(cfg(ladder=ladder))
    # the suggested step count is enough
    msg = ""
    try:
        build_design(cfg(ladder=ladder))
    except DesignError as err:
        msg = str(err)
    ladder[1]["max_steps"] = int(msg.rsplit(">= ", 1)[1].split()[0])
    assert build_design(cfg(ladder=ladder)).summary.extrapolation_factor >= 16


def test_token_multipliers_make_flops_levels_for_one_rung():
    d = build_design(cfg({"token_multipliers": [1.0, 2.0, 32.0], "center_points": 0}, ladder=[LADDER[0]]))
    steps = sorted({r.metadata["max_steps"] for r in d.runs})
    assert steps == [10, 20, 320]
    held = {r.token_multiplier for r in d.runs if r.split == "heldout"}
    assert held == {32.0} and d.summary.extrapolation_factor == pytest.approx(16.0)
    # 8 points x 2 fitted cells = 16; top cell ceil(16 / 3) = 6 points
    assert d.summary.runs == 22 and d.summary.heldout_runs == 6


def test_one_flops_level_cannot_hold_out():
    with pytest.raises(DesignError, match="at least two FLOPs levels"):
        build_design(cfg(ladder=[LADDER[0]]))
    d = build_design(cfg({"heldout_fraction": 0.0}, ladder=[LADDER[0]]))
    assert all(r.split == "fit" for r in d.runs) and d.summary.extrapolation_factor is None


def test_replicates_and_center_points_get_distinct_seeds():
    d = build_design(cfg({"center_points": 3, "replicates": 2}, seeds=[7, 9]))
    center = [r for r in d.runs if r.metadata["center"] and r.model_size == "s"]
    assert sorted(r.seed for r in center) == [7, 9, 10, 11, 12, 13]
    corner = [r for r in d.runs if r.metadata["point"] == 0 and r.model_size == "s"]
    assert sorted(r.seed for r in corner) == [7, 9]


def test_version_is_stable_and_tracks_design_parts():
    a, b = cfg(), cfg()
    assert design_version(a) == design_version(b)
    assert [r.run_id for r in build_design(a).runs] == [r.run_id for r in build_design(b).runs]
    assert design_version(cfg({"center_points": 3})) != design_version(a)
    axes = copy.deepcopy(AXES)
    axes[0]["max"] = 40
    assert design_version(cfg(axes=axes)) != design_version(a)


def test_gsd_levels_and_curvature():
    d = build_design(cfg({"kind": "gsd", "gsd_reduction": 2, "center_points": 0},
                         axes=[{**a, "levels": 3} for a in AXES]))
    assert all(n == 3 for n in d.summary.level_counts.values())
    assert d.summary.resolution is None and d.summary.points == 41  # ~ 81 / 2
    assert d.summary.levels["repair_rate"] == [0.0, 0.5, 1.0]


def test_lhs_is_seeded():
    one = build_design(cfg({"kind": "lhs", "lhs_samples": 10, "seed": 3}))
    two = build_design(cfg({"kind": "lhs", "lhs_samples": 10, "seed": 3}))
    other = build_design(cfg({"kind": "lhs", "lhs_samples": 10, "seed": 4}))
    assert one.points == two.points and one.points != other.points


def test_foldover_breaks_resolution_iii_aliases():
    three = build_design(cfg({"fraction_points": 4, "resolution": 3}, axes=AXES[:3]))
    assert three.summary.resolution == 3 and not three.summary.qd_clear_of_main
    folded = build_design(cfg({"fraction_points": 4, "resolution": 3, "foldover": ["tool_diversity", "task_count",
                                                                                      "repair_rate"]}, axes=AXES[:3]))
    assert folded.summary.resolution is None and folded.summary.points == 8 + 2
    assert folded.summary.qd_clear_of_main


def test_constraints_are_applied_and_counted():
    axes = copy.deepcopy(AXES)
    axes[1] = {**axes[1], "min": 4, "max": 512}
    d = build_design(cfg({"constraints": ["task_count >= 2 * tool_diversity"]}, axes=axes))
    assert d.summary.constrained_points > 0
    assert all(p["task_count"] >= 2 * p["tool_diversity"] for p in d.points)


@pytest.mark.parametrize("design,axes,message", [
    ({"fraction_points": 8, "resolution": 5}, None, "resolution V over 4 axes cannot be reached with "
                                                    "design.fraction_points = 8.*16 points reach it"),
    ({"fraction_points": 12}, None, "power of two, got 12"),
    ({"kind": "gsd"}, [{**AXES[0], "levels": 1}, *AXES[1:]], "'tool_diversity' has 1 level"),
    ({"kind": "full"}, [{**AXES[3], "levels": 5}, *AXES[:3]], "'support_depth': 5 levels collapse"),
    ({"constraints": ["task_count <= tool_diversity", "tool_diversity <= 2 * task_count"]}, None,
     "cannot hold|conflict"),
    ({"constraints": ["task_count >> tool_diversity"]}, None, "not of the form"),
    ({"generators": "a b c"}, None, "has 3 words; the config has 4 axes"),
    ({"kind": "gsd", "foldover": ["tool_diversity"]}, None, "fold-over|foldover applies"),
    ({"heldout_points": 50}, None, "heldout_points = 50 exceeds"),
])
def test_bad_design_input_is_one_clear_line(design, axes, message):
    with pytest.raises(DesignError, match=message) as info:
        build_design(cfg(design, axes=axes))
    assert "\n" not in str(info.value)


def test_micro_preset_size_and_split():
    d = build_design(preset("micro"))
    s = d.summary
    assert 16 <= s.runs <= 24
    # two fitted sizes (the law needs two N to extrapolate in N), one held out above them
    assert len({r.model_size for r in d.runs if r.split == "fit"}) == 2 == s.fitted_sizes
    assert "too few to check a prediction one rung up" in s.ladder_statement
    assert s.resolution >= 3
    assert s.heldout_runs == math.ceil(0.25 * s.runs)
    assert s.extrapolation_factor >= 16
    assert {r.model_size for r in d.runs if r.split == "heldout"} == {d.cells[-1].model_size}


def test_default_preset_fits_three_sizes_and_holds_out_a_fourth_in_about_300_runs():
    d = build_design(preset("default"))
    s = d.summary
    assert 250 <= s.runs <= 350  # about 300 models across four sizes (the research plan)
    assert len({r.model_size for r in d.runs}) == 4
    # three fitted sizes: rung cross-validation (fit all but the largest, predict it) has a rung to check on
    assert s.fitted_sizes == 3 == len({r.model_size for r in d.runs if r.split == "fit"})
    assert s.ladder_statement.startswith("3 fitted sizes")
    # >= 16x in FLOPs with attention and the unembedding counted (and more in 6 N D)
    assert s.extrapolation_factor >= 16 and s.extrapolation_factor_6nd > s.extrapolation_factor
    assert {r.model_size for r in d.runs if r.split == "heldout"} == {"tiny-l"} and s.heldout_runs >= 10
    assert all(n >= 3 for n in s.level_counts.values())  # curvature per axis
    assert s.qd_clear_of_main


def test_top_rung_runs_only_at_its_largest_multiple():
    d = build_design(cfg({"token_multipliers": [0.5, 1.0], "center_points": 0}, evals={"checkpoints": 4}))
    cells = [(c.model_size, c.token_multiplier, c.split) for c in d.cells]
    assert cells == [("s", 0.5, "fit"), ("s", 1.0, "fit"), ("l", 1.0, "heldout")]
    # without a held-out share every rung is crossed with every multiple
    d = build_design(cfg({"token_multipliers": [0.5, 1.0], "heldout_fraction": 0.0}, evals={"checkpoints": 4}))
    assert len(d.cells) == 4 and all(c.split == "fit" for c in d.cells)


def test_explicit_generators_below_the_resolution_are_rejected():
    with pytest.raises(DesignError, match="give resolution III, below design.resolution = 4"):
        build_design(cfg({"generators": "a b c ab"}))
    d = build_design(cfg({"generators": "a b c -abc", "center_points": 0}))
    assert d.summary.resolution == 4 and d.summary.generators == "a b c -abc"
    # the sign flips the fourth column relative to "a b c abc"
    plain = build_design(cfg({"generators": "a b c abc", "center_points": 0}))
    assert [p["support_depth"] for p in d.points] != [p["support_depth"] for p in plain.points]


@pytest.mark.parametrize("fraction,other,replicates", [(0.25, 220, 1), (0.2, 16, 1), (0.25, 18, 2), (0.5, 7, 1),
                                                       (0.1, 99, 3), (0.3, 1, 1)])
def test_top_cell_is_exactly_what_the_mask_holds_out(fraction, other, replicates):
    from grid.design import _top_points

    k = _top_points(fraction, other, replicates)
    flops = [1.0] * other + [2.0] * (k * replicates)
    assert heldout_mask(flops, fraction) == [False] * other + [True] * (k * replicates)
    if k > 1:  # one point fewer would not be enough
        fewer = [1.0] * other + [2.0] * ((k - 1) * replicates)
        assert heldout_mask(fewer, fraction) != [False] * other + [True] * ((k - 1) * replicates)


def test_summary_is_a_frozen_model_whose_json_round_trips():
    from grid.models import DesignSummary

    d = build_design(cfg())
    again = DesignSummary.model_validate_json(d.summary.model_dump_json())
    assert again == d.summary
    assert [c.model_dump() for c in d.summary.cells] == [c.model_dump() for c in d.cells]
    assert d.summary.estimated_cost.total == pytest.approx(d.summary.estimated_cost.data
                                                           + d.summary.estimated_cost.compute, abs=0.011)
    with pytest.raises(Exception):
        d.summary.runs = 0  # type: ignore[misc]


# ---- the proxy protocol: tokens per parameter, non-embedding N, epochs, scanned rates, the 16x check


def test_proxy_preset_cells_follow_tokens_per_parameter_on_nonembedding_n():
    c = preset("proxy")
    d = build_design(c)
    seq = c.design.tokens_per_sequence
    fitted = {r.model_size for r in d.runs if r.split == "fit"}
    nonemb = [c.model_size(m).approx_params_nonembedding for m in fitted]
    assert max(nonemb) / min(nonemb) >= 3.9  # the fitted rungs span 4x in non-embedding N
    for r in d.runs:
        size = c.model_size(r.model_size)
        tpp = r.metadata["tokens_per_param"]
        assert r.model_params == size.approx_params_nonembedding
        assert r.metadata["params_total"] == size.approx_params > r.model_params
        steps = r.metadata["max_steps"]
        assert steps == math.ceil(tpp * r.model_params / (size.batch_size * seq) - 1e-9)
        assert r.train_tokens == steps * size.batch_size * seq
        assert tpp * r.model_params <= r.train_tokens < tpp * r.model_params + size.batch_size * seq
    held = [r for r in d.runs if r.split == "heldout"]
    assert {r.model_size for r in held} == {"p-l"} and {r.metadata["tokens_per_param"] for r in held} == {4.0}
    assert d.summary.extrapolation_factor >= 16  # in FLOPs with attention and the unembedding counted


def test_proxy_preset_is_the_protocol_of_issue_29():
    """Copy-capable proxies, resolution IV, seeds where decisions and the check are made, no 2-tpp cell."""
    c = preset("proxy")
    d = build_design(c)
    s = d.summary
    assert all(m.num_layers >= 4 and m.hidden_size // m.num_heads >= 16 and m.copy_warning is None
               for m in c.ladder)
    assert s.resolution >= 4 and s.qd_clear_of_main
    assert c.eval.validation == "valid-calls" and c.eval.checkpoints >= 4 and c.train.weight_decay == 0.1
    assert len(c.lr_scan.rungs) == 3 and c.synth.tool_spread == "stratified"
    seeds = {}
    for r in d.runs:
        seeds.setdefault((r.model_size, json.dumps(r.recipe, sort_keys=True)), set()).add(r.seed)
    assert all(len(v) == 2 for (m, _), v in seeds.items() if m == "p-m")  # 2 seeds at the largest fitted rung
    assert all(len(v) == 3 for (m, _), v in seeds.items() if m == "p-l")  # 3 per held-out recipe
    held = [json.loads(k) for (m, k) in seeds if m == "p-l"]
    assert len(held) == 3 and len({h["tool_diversity"] for h in held}) == 2  # the held-out recipes span tools
    assert min(r.metadata["tokens_per_param"] for r in d.runs) >= 4  # no warm-up-only cell
    assert s.extrapolation_factor_6nd > s.extrapolation_factor >= 16


def test_held_out_rung_below_16x_is_refused_naming_the_factor():
    data = copy.deepcopy(preset("proxy").model_dump(mode="json"))
    data["ladder"][-1]["hidden_size"] = 48  # p-l barely above p-m
    with pytest.raises(DesignError, match=r"held-out runs reach only 3\.8\dx the largest fitted run's FLOPs, below "
                                          r"design.min_extrapolation_factor = 16; widen rung 'p-l' \(.*N x 2\.0\d or more\)"):
        build_design(parse_config(data))


def test_runs_above_max_epochs_are_refused_before_training_naming_the_run():
    data = copy.deepcopy(preset("proxy").model_dump(mode="json"))
    data["axes"][1]["min"] = 256  # task_count: too few tasks for p-l's 1.5M tokens
    with pytest.raises(DesignError, match=r"plan more than train.max_epochs = 4 passes over their tasks, the most "
                                          r"run \S+ \(p-l, 741 steps x 2 over task_count 256: 5\.79 epochs\)"):
        build_design(parse_config(data))
    data["train"]["max_epochs"] = None  # allowed: the epochs are recorded, the fit's repetition law handles them
    assert build_design(parse_config(data)).summary.runs == 45


def test_scanned_learning_rates_are_recorded_and_versioned():
    c = preset("proxy")
    rates = {"p-xs": 0.02, "p-s": 0.015, "p-m": 0.01, "p-l": 0.005}
    plain, scanned = build_design(c), build_design(c, learning_rates=rates)
    assert plain.version != scanned.version == build_design(c, learning_rates=dict(rates)).version
    assert {r.model_size: r.metadata["learning_rate"] for r in scanned.runs} == rates
    assert {r.metadata["learning_rate"] for r in plain.runs} == {m.learning_rate for m in c.ladder}
    with pytest.raises(DesignError, match=r"learning rates given for unknown rungs \['p-xl'\]"):
        build_design(c, learning_rates={"p-xl": 0.1})


@pytest.mark.parametrize("bad, message", [([], "must be positive numbers"), ([2.0, -1.0], "must be positive numbers"),
                                          ([2.0, 2.0], "has duplicates")])
def test_bad_tokens_per_param(bad, message):
    with pytest.raises(DesignError, match=message):
        build_design(cfg({"tokens_per_param": bad}))


def test_demo_preset_follows_the_protocol_at_small_scale():
    c = preset("demo")
    d = build_design(c)
    s = d.summary
    assert s.runs == 18 and s.heldout_runs == 3 and s.fitted_sizes == 3
    assert 3 <= s.extrapolation_factor < 16  # a demo-sized held-out rung: the demo's summary says so
    fitted = {r.model_size for r in d.runs if r.split == "fit"}
    nonemb = [c.model_size(m).approx_params_nonembedding for m in fitted]
    assert max(nonemb) / min(nonemb) >= 3.9 and c.train.tokenizer == "shared" and len(c.lr_scan.rungs) == 3
    assert all(m.copy_warning is None for m in c.ladder) and c.eval.validation == "valid-calls"
    assert c.eval.checkpoints >= 2 and c.eval.benchmarks == ["indist-calls", "heldout-servers"]


def test_a_run_with_fewer_steps_than_checkpoints_is_refused_naming_it():
    c = cfg({"token_multipliers": [0.5, 1.0], "center_points": 0})  # s at 0.5: 5 steps, 6 checkpoints
    with pytest.raises(DesignError, match=r"train fewer steps than eval.checkpoints = 6, the fewest run r-[0-9a-f]+ "
                                          r"\(s, 5 steps\)"):
        build_design(c)
    build_design(cfg({"token_multipliers": [0.5, 1.0], "center_points": 0}, evals={"validation": None}))  # none kept
    # log spacing needs more steps for the same count (6: 1/32 .. 1 of training): the rule is named
    with pytest.raises(DesignError, match=r"train fewer steps than eval.checkpoints = 6 \(log-spaced: 24 steps\), "
                                          r"the fewest run r-[0-9a-f]+ \(s, 10 steps\)"):
        build_design(cfg({"center_points": 0}, evals={"checkpoint_spacing": "log"}))
