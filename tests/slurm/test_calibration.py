"""``toolscale calibrate-cost``: PFLOP per GPU-hour and per_pflop from pilot runs' FLOPs and GPU-seconds; GPU
time per attempt from sacct's format; allocate charges evaluation and GPU-hosted synthesis."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from grid.cost import cost_model_from_config
from grid.models import RunResult, TrainStats
from grid.results import write_result
from slurm.gpu_time import parse_sacct_gpu
from slurm.paths import LaunchPaths
from toolscale.cli import main
from toolscale.config import parse_config
from toolscale.errors import ConfigError


def test_sacct_attempts_add_up():
    text = ("JobID|ElapsedRaw|AllocTRES\n"
            "7_1|100|billing=8,cpu=8,gres/gpu=4,mem=64G,node=1\n"  # preempted attempt
            "7_1|20|billing=8,cpu=8,gres/gpu:h100=4,mem=64G,node=1\n"  # the requeued one
            "7_2|50|cpu=8,mem=64G\n"  # a CPU job: no GPU time
            "8|oops|x\n")
    assert parse_sacct_gpu(text) == {"7_1": 480.0, "7_2": 0.0}


def test_calibrate_cost_from_pilot_runs(make, capsys):
    """Three pilot runs at 2 GPUs: 1.2 PFLOP each in 600 GPU-s of which 60 s x 2 GPUs were evaluation."""
    env = make(n_runs=3, executor="debug")
    text = env.config_path.read_text().replace('name = "s"\n', 'name = "s"\ngpus = 2\n', 1)
    env.config_path.write_text(text)
    paths = LaunchPaths.of(env.folder)
    for rid in env.run_ids:
        write_result(paths.results, RunResult(
            run_id=rid, experiment="sl-test", status="done", finished_at=datetime.now(UTC),
            train=TrainStats(params=1e9, train_tokens=2e5, train_flops=1.2e15, steps=10),
            extra={"gpu_seconds": 600.0, "stage_s": {"dataset": 0.0, "train": 240.0, "eval": 60.0}}))
    assert main(["sync", "--config", str(env.config_path), "--no-retry"]) == 0
    capsys.readouterr()
    assert main(["calibrate-cost", "--config", str(env.config_path), "--gpu-hour-usd", "2.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (rung,) = out["rungs"]
    train_h = 3 * (600.0 - 120.0) / 3600  # evaluation taken out
    assert rung["runs"] == 3 and rung["pflops"] == pytest.approx(3.6)
    assert rung["gpu_hours"] == pytest.approx(train_h) and rung["source"] == "jobs"
    assert rung["pflop_per_gpu_hour"] == pytest.approx(3.6 / train_h, rel=1e-5)
    assert out["per_pflop"] == pytest.approx(2.5 * train_h / 3.6, rel=1e-5)
    assert out["eval_gpu_s_per_run"] == pytest.approx(120.0)
    assert main(["calibrate-cost", "--config", str(env.config_path)]) == 0  # no price: says what is missing
    assert "no price per GPU-hour: pass --gpu-hour-usd" in capsys.readouterr().out
    assert main(["calibrate-cost", "--config", str(env.config_path), "--gpu-hour-usd", "2.5"]) == 0
    assert f"set [cost] per_pflop = {out['per_pflop']:.6g}" in capsys.readouterr().out
    assert main(["calibrate-cost", "--config", str(env.config_path), "--gpu-hour-usd", "-1"]) == 2


def _cfg(**cost):
    return parse_config({"experiment": {"name": "c"}, "axes": [
        {"name": "task_count", "kind": "diversity", "unit": "tasks", "min": 10, "max": 100, "cost_per_unit": 1.0}],
        "ladder": [{"name": "m", "params": 1_000_000_000, "pretrained": "/m"}], "cost": cost})


def test_allocate_charges_evaluation_and_gpu_hosted_synthesis():
    base = cost_model_from_config(_cfg(per_pflop=0.002, tokens_per_task=1000.0))
    full = cost_model_from_config(_cfg(per_pflop=0.002, tokens_per_task=1000.0, gpu_hour_usd=3.6,
                                       eval_gpu_s_per_run=600.0, synth_gpu_s_per_task=2.0))
    levels = {"task_count": 100.0}
    train = base.spend(levels, 1e9)["compute"]
    assert train == pytest.approx(0.002 * 6 * 1e9 * 100 * 1000 / 1e15)
    # a GPU-second costs 3.6 / 3600 = 0.001 usd: 600 s of eval + 2 s x 100 tasks of synthesis = 0.8 usd more
    assert full.spend(levels, 1e9)["compute"] == pytest.approx(train + 0.8)
    with pytest.raises(ConfigError, match="set cost.gpu_hour_usd"):
        _cfg(eval_gpu_s_per_run=600.0)
