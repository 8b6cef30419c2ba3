"""``toolscale verify`` end to end on a tiny rung (real synthesis, training and eval), and its bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fit.laws import get_law
from fit.models import FitResult
from fit.simulate import builtin_truth, law_inputs_for_config, simulate_results
from grid.design import build_design
from grid.models import MetricResult
from grid.registry import Registry
from toolscale.cli import main
from toolscale.config import load_config

CONFIG = """\
[experiment]
name = "exp"
registry = "{root}/reg.duckdb"
target_model_size = "t1"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 8
integer = true
cost_per_unit = 150.0

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 16
max = 32
integer = true
cost_per_unit = 0.8

[[axes]]
name = "repair_rate"
kind = "quality"
unit = "fraction"
min = 0.0
max = 1.0
spacing = "linear"
cost_per_unit = 400.0
baseline = 0.0

[[ladder]]
name = "t0"
hidden_size = 8
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 3
batch_size = 2

[[ladder]]
name = "t1"
hidden_size = 16
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 3
batch_size = 2

[design]
kind = "full"
heldout_fraction = 0.0
min_extrapolation_factor = 1.0

[probe]
sample_size = 8
train_steps = 3

[train]
threads = 1

[eval]
benchmarks = ["heldout-calls"]
limit = 4
validation_limit = 4
checkpoints = 2

[executor]
kind = "debug"
folder = "{root}/runs"
"""


@pytest.fixture
def setup(tmp_path: Path):
    """A config, and a registry holding its design with simulated token_prob values and one converged fit."""
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG.format(root=tmp_path))
    cfg = load_config(path)
    inputs = law_inputs_for_config(cfg)
    truth = builtin_truth(inputs, "multiplicative", benchmark="heldout-calls")
    law = get_law("multiplicative", inputs)
    runs = [r.model_copy(update={"experiment": "exp"}) for r in build_design(cfg).runs]
    scores = simulate_results(runs, truth, law, seed=0, noise_sd=0.005)
    rng = np.random.default_rng(0)
    draws = [{k: v * float(rng.uniform(0.97, 1.03)) for k, v in truth.params.items()} for _ in range(30)]
    fit = FitResult(law="multiplicative", inputs=list(law.inputs), params=truth.params, target="score", loss=0.0,
                    converged=True, n_points=len(runs), n_params=len(truth.params), data_hash="t", huber_delta=0.05,
                    n_starts=1, residual_sd=0.005, log_likelihood=0.0, aic=0.0, bic=0.0, bootstrap=draws,
                    experiment="exp", benchmark="heldout-calls", metric="token_prob")
    with Registry(cfg.experiment.registry) as reg:
        reg.import_runs("exp", [a.name for a in cfg.axes], runs,
                        [[MetricResult(benchmark="heldout-calls", metric="token_prob", score=v)] for v in scores],
                        source="design")
        reg.ensure_experiment("exp", config=cfg.model_dump(mode="json"))
        reg.save_fit(experiment="exp", benchmark="heldout-calls", metric="token_prob", law=fit.law, converged=True,
                     n_points=fit.n_points, data_hash="t", payload=fit.model_dump(mode="json"))
    return path, cfg


def _snapshot(registry: str) -> tuple:
    with Registry(registry, read_only=True) as reg:
        return ([e.name for e in reg.experiments()], len(reg.runs()), len(reg.allocations()))


@pytest.mark.parametrize("extra, needle", [
    (["--seeds", "0"], "--seeds: must be a positive integer, got 0"),
    (["--model-size", "1e9"], "--model-size '1e9': the ladder cannot train it"),
    (["--model-size", "huge"], "the ladder cannot train it; verify trains a ladder rung (t0, t1)"),
    (["--budget", "100"], "below the cheapest feasible plan (612.80 usd"),
])
def test_bad_input_is_one_line_and_stores_nothing(setup, capsys, extra, needle) -> None:
    path, cfg = setup
    before = _snapshot(cfg.experiment.registry)
    argv = ["verify", "--budget", "1500", "--benchmark", "heldout-calls", "--config", str(path), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and "Traceback" not in "\n".join(err)
    assert _snapshot(cfg.experiment.registry) == before


@pytest.mark.parametrize("which, extra, needle", [
    ("stored", ["--budget", "100"], "below the cheapest feasible plan (612.80 usd"),  # planned from its benchmark
    ("unknown", [], "f-nope"),
    (None, [], "verify needs --benchmark NAME"),
])
def test_fit_id_names_the_benchmark_and_experiment(setup, capsys, which, extra, needle) -> None:
    """--fit-id plans from that fit, its benchmark and experiment (a budget below the cheapest plan shows the plan
    was reached without training); an unknown id and neither flag are one line, exit 2, nothing stored."""
    path, cfg = setup
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        stored = reg.fits("exp")[0].fit_id
    before = _snapshot(cfg.experiment.registry)
    ids = {"stored": ["--fit-id", stored], "unknown": ["--fit-id", "f-nope"], None: []}[which]
    assert main(["verify", "--budget", "1500", "--config", str(path), *ids, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and len(err) == 1, err
    assert _snapshot(cfg.experiment.registry) == before


@pytest.mark.slow
@pytest.mark.integration
def test_verify_trains_the_three_plans_and_a_rerun_trains_nothing(setup, capsys, tmp_path) -> None:
    path, cfg = setup
    plot = tmp_path / "v.png"
    argv = ["verify", "--budget", "1500", "--benchmark", "heldout-calls", "--config", str(path), "--seeds", "1",
            "--poll", "0.2", "--plot", str(plot), "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    names = [a["name"] for a in out["arms"]]
    assert names[:3] == ["allocator", "diversity_only", "equal_spend"] and set(names) <= {*names[:3], "best_observed"}
    for arm in out["arms"]:
        assert arm["planned_cost"] <= 1500 and len(arm["realised_scores"]) == 1
        assert 0.0 < arm["realised_scores"][0] < 1.0 and arm["synthesis_cost"] > 0
        for name in ("tool_diversity", "task_count"):
            assert arm["levels"][name] == int(arm["levels"][name])
    alloc, div = out["arms"][0], out["arms"][1]
    assert out["realised_gain"] == pytest.approx(alloc["realised_scores"][0] - div["realised_scores"][0])
    assert out["realised_gain_ci"] is None  # one seed: no interval
    assert out["complete"] and plot.stat().st_size > 0
    # a check that counts, or a recipe compared with itself and said so
    assert isinstance(out["inside_interval"], bool) or any("not counted" in n for n in out["notes"])
    if "best_observed" in names:  # the stronger arm, compared as the diversity-only one
        assert out["realised_gain_best_observed"] is not None and out["predicted_gain_best_observed"] is not None
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        runs = reg.runs(out["group"])
        design = reg.designs(out["group"])[0]["summary"]
        fitted = reg.runs("exp")
        assert not reg.allocations("exp")  # the plans live in the group's design record
    assert {r.metadata["arm"] for r in runs} <= set(names) and "allocator" in {r.metadata["arm"] for r in runs}
    assert {r.status for r in runs} == {"done"} and all(r.split == "heldout" for r in runs)
    assert design["group"] == "verification" and design["verifies"] == "exp"
    assert design["allocation"]["plan"]["levels"] == alloc["levels"]
    assert all(r.experiment == "exp" for r in fitted)  # nothing joined the fitted experiment
    attempts = {r.run_id: r.attempts for r in runs}
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["group"] == out["group"] and again["realised_gain"] == out["realised_gain"]
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        assert {r.run_id: r.attempts for r in reg.runs(out["group"])} == attempts  # nothing retrained


def test_verification_runs_are_read_at_their_envelope_on_the_experiments_validation_split():
    """A code experiment's runs scored checkpoints on code-valid: verify reads each at the checkpoint best there."""
    from grid.models import RunRecord
    from toolscale.cli.verify import _as_target

    ckpts = {10: {"code-valid/bpb": 3.0, "code-indist/bpb": 3.1}, 20: {"code-valid/bpb": 2.0, "code-indist/bpb": 2.4},
             50: {"code-valid/bpb": 2.5, "code-indist/bpb": 2.2}}
    run = RunRecord(run_id="r1", experiment="v", design_version="d", recipe={}, model_size="m", model_params=1e4,
                    train_tokens=1e5, train_flops=6e9, seed=0, status="done", attempts=1, job_id=None, split="fit",
                    error=None, source="design", metadata={}, metrics={"code-indist/bpb": 2.2}, checkpoints=ckpts)
    (seen,) = _as_target([run], "code-indist", "bpb", "code-valid")
    assert seen.metrics["code-indist/bpb"] == 2.4 and seen.metadata["target_step"] == 20
    with pytest.raises(Exception, match="needs checkpoints scored on valid-calls"):
        _as_target([run], "code-indist", "bpb", None)
