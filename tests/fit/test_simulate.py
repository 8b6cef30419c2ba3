"""Simulation over the config's real design, stored as simulated, and recovered by the fit."""

from __future__ import annotations

from pathlib import Path

import pytest

from fit.errors import FitInputError
from fit.experiment import fit_experiment
from fit.models import FitRequest
from fit.simulate import builtin_truth, law_inputs_for_config, load_truth, simulate_experiment
from grid.registry import Registry
from toolscale.config import load_config, parse_config

SMALL = Path(__file__).with_name("small.toml")


def test_simulated_experiment_is_labelled_and_follows_the_design(tmp_path):
    from grid.design import build_design

    config = load_config(SMALL)
    with Registry(tmp_path / "r.duckdb") as reg:
        out = simulate_experiment(reg, config, "sim", hypothesis="additive", seed=3)
        runs = reg.runs("sim", status="done")
        info = reg.experiment("sim")
    design = build_design(config)
    assert out["runs"] == len(design.runs) == len(runs) == 108
    assert out["heldout"] == sum(r.split == "heldout" for r in design.runs) == 27
    assert info.simulated and info.config["axes"][0]["name"] == "tool_diversity"
    assert {r.source for r in runs} == {"simulated"}
    assert all(0.0 <= r.metrics["simulated/score"] <= 1.0 for r in runs)
    planned = sorted((r.model_size, r.train_flops) for r in design.runs)
    assert sorted((r.model_size, r.train_flops) for r in runs) == planned


def test_fit_recovers_the_simulated_truth(tmp_path):
    config = load_config(SMALL)
    with Registry(tmp_path / "r.duckdb") as reg:
        simulate_experiment(reg, config, "sim", hypothesis="multiplicative", noise_sd=0.005, seed=1)
        runs = reg.runs("sim", status="done")
        cfg = parse_config(reg.experiment("sim").config)
    req = FitRequest(experiment="sim", benchmark="simulated", law="auto", n_bootstrap=0, n_starts=4, max_grid=1024,
                     n_jobs=1)
    res = fit_experiment(runs, req, config=cfg)
    assert res.fit.simulated and res.points.simulated
    assert res.interaction is not None and res.interaction.supported == "multiplicative"
    assert res.fit.law == "multiplicative" and res.fit.holdout_source == "stored split column"
    truth = builtin_truth(law_inputs_for_config(config), "multiplicative").params
    for p in ("alpha_N", "G_tool_diversity", "G_task_count"):
        assert res.fit.params[p] == pytest.approx(truth[p], rel=0.3), p
    assert res.fit.heldout is not None and res.fit.heldout.mae < 0.02


def test_truth_file_and_refusals(tmp_path):
    config = load_config(SMALL)
    inputs = law_inputs_for_config(config)
    params = builtin_truth(inputs, "additive").params
    body = 'law = "additive"\nnoise_sd = 0.0\nbenchmark = "toy"\n[params]\n' + \
        "\n".join(f"{k} = {v}" for k, v in params.items())
    (tmp_path / "truth.toml").write_text(body)
    truth = load_truth(tmp_path / "truth.toml")
    assert truth.law == "additive" and truth.noise_sd == 0.0 and truth.benchmark == "toy"
    (tmp_path / "bad.toml").write_text('law = "additive"\n[params]\nS0 = 0.1\n')
    with Registry(tmp_path / "r.duckdb") as reg:
        with pytest.raises(FitInputError, match="lacks parameters"):
            simulate_experiment(reg, config, "sim", truth_path=tmp_path / "bad.toml")
        assert reg.runs("sim") == []  # nothing stored
    with pytest.raises(FitInputError, match="truth file not found"):
        load_truth(tmp_path / "missing.toml")


def test_loss_truth_over_the_design_is_stored_as_a_loss(tmp_path):
    config = load_config(SMALL)
    (tmp_path / "t.toml").write_text('law = "chinchilla"\nnoise_sd = 0.01\nbenchmark = "lm"\n[params]\n'
                                     'E = 1.8\nA = 400.0\nalpha = 0.34\nB = 2000.0\nbeta = 0.36\n')
    with Registry(tmp_path / "r.duckdb") as reg:
        out = simulate_experiment(reg, config, "simloss", truth_path=tmp_path / "t.toml")
        runs = reg.runs("simloss", status="done")
    assert out["metric"] == "loss" and all(r.metrics["lm/loss"] > 1.8 for r in runs)
    res = fit_experiment(runs, FitRequest(experiment="simloss", benchmark="lm", law="chinchilla", n_bootstrap=0,
                                          holdout="none"))
    assert res.fit.target == "loss" and res.fit.n_points == 108
