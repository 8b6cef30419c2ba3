"""Training stages in grid runs: midtrain -> SFT at equal total tokens, SFT -> GRPO, each accounted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grid.models import RunSpec
from grid.registry import Registry
from slurm.launcher import launch
from toolscale.config import load_config

CONFIG = """\
[experiment]
name = "stages"
registry = "{root}/reg.duckdb"

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 24
max = 48
integer = true
{extra_axis}
[[ladder]]
name = "t1"
hidden_size = 16
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 8
batch_size = 2

[synth]
narratives = true

[probe]
sample_size = 8
train_steps = 2

[train]
threads = 1
{train}

[eval]
benchmarks = ["heldout-calls"]
limit = 2
checkpoints = 2
validation_limit = 4

[executor]
kind = "debug"
folder = "{root}/runs"
"""

MIDTRAIN_AXIS = """
[[axes]]
name = "midtrain_tokens"
kind = "stage"
unit = "tokens"
min = 0
max = 2000
spacing = "linear"
"""


def _launch(tmp_path: Path, train: str, runs: dict[str, dict[str, float]], extra_axis: str = ""):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG.format(root=tmp_path, train=train, extra_axis=extra_axis))
    cfg = load_config(path)
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("stages", axes=[a.name for a in cfg.axes])
        reg.add_runs([RunSpec(run_id=k, experiment="stages", design_version="v", recipe=v, model_size="t1")
                      for k, v in runs.items()])
    launch(cfg, cfg.experiment.registry, executor="debug")
    with Registry(cfg.experiment.registry, read_only=True) as reg:
        out = {r.run_id: r for r in reg.runs("stages")}
    assert {r.status for r in out.values()} == {"done"}, [r.error for r in out.values()]
    return out


@pytest.mark.integration
def test_midtrain_then_sft_at_equal_total_tokens(tmp_path):
    """Two real runs through the pipeline job (synthesis, probe, mid-training, SFT, scoring): over 10 s on a
    loaded machine because the stages are real TRL runs, which is what it checks."""
    runs = _launch(tmp_path, 'stages = ["midtrain", "sft"]',
                   {"off": {"task_count": 24.0, "midtrain_tokens": 0.0},
                    "on": {"task_count": 24.0, "midtrain_tokens": 2000.0}}, MIDTRAIN_AXIS)
    off, on = runs["off"].metadata, runs["on"].metadata
    assert set(off["stages"]) == {"sft"} and off["stage_plan"]["sft_steps"] == 8
    assert set(on["stages"]) == {"midtrain", "sft"}
    plan = on["stage_plan"]
    assert plan["midtrain_steps"] >= 1 and plan["sft_steps"] < 8 and plan["midtrain_tokens"] == 2000.0
    # every stage counts in the run's FLOPs
    flops = {k: v["train_flops"] for k, v in on["stages"].items()}
    assert runs["on"].train_flops == pytest.approx(sum(flops.values()))
    # equal total tokens within one SFT step's worth (sequences differ in length)
    sft_step_tokens = off["stages"]["sft"]["train_tokens"] / 8
    total_on = sum(v["train_tokens"] for v in on["stages"].values())
    assert abs(total_on - off["stages"]["sft"]["train_tokens"]) < 3 * sft_step_tokens
    # the SFT stage started from the mid-trained model: the same tokenizer, the midtrain run in its identity
    workdirs = list((tmp_path / "runs").rglob("midtrain/run.json"))
    assert workdirs and (workdirs[0].parent.parent / "model" / "run.json").read_text().count('"stage": "midtrain"') == 1


@pytest.mark.integration
def test_grpo_steps_axis_zero_is_the_sft_only_arm(tmp_path):
    """Two real runs (SFT, then one GRPO step for one of them): over 10 s on a loaded machine because both
    stages are real TRL runs."""
    axis = ('\n[[axes]]\nname = "grpo_steps"\nkind = "stage"\nunit = "steps"\nmin = 0\nmax = 1\n'
            'spacing = "linear"\ninteger = true\n')
    train = ('stages = ["sft", "grpo"]\ngrpo_n_envs = 3\ngrpo_generations = 2\ngrpo_prompts_per_step = 1\n'
             'grpo_draw_cap = 1\ngrpo_max_completion_length = 24\nwarmstart_n_envs = 3\nwarmstart_steps = 2\n'
             'warmstart_loss = "all"\nwarmstart_copy_drills = 1\ngrpo_negative_weight = 0.5')
    runs = _launch(tmp_path, train,
                   {"sft": {"task_count": 24.0, "grpo_steps": 0.0}, "rl": {"task_count": 24.0, "grpo_steps": 1.0}},
                   axis)
    warm_runs = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("warmstart/run.json")]
    assert warm_runs and all(r["loss_on"] == "all" for r in warm_runs)  # [train].warmstart_loss reaches the stage
    drills = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("warmstart/copy_drills.json")]
    assert drills and all(d["sequences"] == 1 and d["steps_drilled"] == 2 for d in drills)  # copy drills
    (grpo_stats,) = [json.loads(p.read_text()) for p in (tmp_path / "runs").rglob("grpo/train_stats.json")]
    assert grpo_stats["negative_weight"] == 0.5  # [train].grpo_negative_weight reaches the stage
    sft, rl = runs["sft"].metadata, runs["rl"].metadata
    # both arms are warm-started on environment episodes; only the RL arm runs GRPO; the law sees sft / sft,grpo
    assert set(sft["stages"]) == {"sft", "warmstart"} and set(rl["stages"]) == {"sft", "warmstart", "grpo"}
    assert rl["stage_plan"]["grpo_steps"] == 1 and sft["stage_plan"]["warmstart_steps"] == 2
    assert sft["stages"]["warmstart"] == rl["stages"]["warmstart"] | {"wall_s": sft["stages"]["warmstart"]["wall_s"]}
    assert runs["rl"].train_flops == pytest.approx(sum(v["train_flops"] for v in rl["stages"].values()))
    assert sft["dataset_key"] == rl["dataset_key"]  # a stage axis is not a knob
    # the arm that ran second reused the first one's SFT model, warm start and environments
    assert sorted([sft["stage_plan"]["reused"], rl["stage_plan"]["reused"]]) == [0.0, 1.0]
    from fit.data import train_stages_of

    assert train_stages_of(runs["sft"]) == ["sft"] and train_stages_of(runs["rl"]) == ["sft", "grpo"]
    workdir = next((tmp_path / "runs").rglob("warm_envs.jsonl")).parent
    rl_prompts = {json.loads(line)["prompt"] for line in (workdir / "envs.jsonl").read_text().splitlines()}
    warm_prompts = {json.loads(line)["prompt"] for line in (workdir / "warm_envs.jsonl").read_text().splitlines()}
    assert rl_prompts and warm_prompts and not rl_prompts & warm_prompts
