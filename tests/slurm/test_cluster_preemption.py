"""Preemption on the dev SLURM cluster: ``scontrol requeue`` (SIGTERM) and the time-limit warning (SIGUSR2)
mid-training. The job saves a checkpoint at the signal, is requeued within the same submission, resumes from
that checkpoint, and the run is done once, with nothing lost. Also the CPU dataset array the GPU arrays wait on.

Skipped when no dev cluster answers (``slurm/dev-cluster.sh up``; ``make test`` starts it)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from slurm.launcher import launch
from slurm.paths import LaunchPaths
from slurm.sync import slurm_states, wait

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(400), pytest.mark.usefixtures("dev_cluster")]


def _wait_step(workdir: Path, at_least: int, timeout_s: float = 180) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            step = int((workdir / "step").read_text() or 0)
        except (OSError, ValueError):
            step = 0
        if step >= at_least:
            return step
        time.sleep(0.2)
    raise AssertionError(f"training in {workdir} never reached step {at_least}")


def _preempt_and_finish(env, rows, monkeypatch, signal_cmd) -> tuple[object, list[str], dict]:
    monkeypatch.setenv("TOOLSCALE_TEST_SFT_STEPS", "16")
    monkeypatch.setenv("TOOLSCALE_TEST_STEP_S", "1")
    rep = launch(env.config, env.registry, job_kind="sft_tiny")
    run_id = env.run_ids[0]
    job_id = rep.job_ids[run_id]
    workdir = LaunchPaths.of(env.folder).workdir(run_id)
    at = _wait_step(workdir, 4)
    subprocess.run([*signal_cmd, job_id], check=True, capture_output=True)
    final = wait(env.registry, config=env.config, poll_s=1, timeout_s=300)
    r = rows(env)[run_id]
    assert final.counts["done"] == 1, r.error
    starts = (workdir / "starts.log").read_text().split("\n")[:-1]
    stats = json.loads((workdir / "model" / "train_stats.json").read_text())
    return r, starts, {"at": at, "job": job_id, "stats": stats, "workdir": workdir}


def test_scontrol_requeue_mid_training_resumes_from_the_signal_time_checkpoint(make, rows, monkeypatch):
    """``scontrol requeue`` mid-training: the job saves at the signal and the same job resumes there. About 45 s:
    real training steps, a real requeue, and SLURM's own delay before it starts the job again."""
    env = make(n_runs=1, executor="slurm", timeout_min=10)
    r, starts, info = _preempt_and_finish(env, rows, monkeypatch, ["scontrol", "requeue"])
    assert len(starts) == 2 and starts[0] == f"fresh job {info['job']}"
    resumed = int(starts[1].split()[0].removeprefix("checkpoint-"))
    assert resumed >= info["at"]  # saved at the signal, not at a periodic checkpoint (there are none)
    assert starts[1].endswith(f"job {info['job']}")  # the same job, requeued by SLURM: no second job
    assert info["stats"]["resumed_from"] == f"checkpoint-{resumed}"
    assert [p["step"] for p in info["stats"]["loss_curve"]] == list(range(1, 17))  # nothing lost, nothing redone
    assert r.attempts == 1 and r.job_id == info["job"]
    assert r.metadata["requeues"] == 1 and r.metadata["attempts_in_job"] == 2
    results = list((LaunchPaths.of(env.folder).results).glob("*.result.json"))
    assert [p.name for p in results] == [f"{env.run_ids[0]}.result.json"]
    assert not (info["workdir"] / "lease.json").exists()


def test_time_limit_warning_saves_then_requeues_through_submitit(make, rows, monkeypatch):
    """SIGUSR2, as SLURM sends it signal_delay_s before the limit: the save comes first, then submitit's
    checkpoint-and-requeue (requeues.log), and the requeued job resumes from the saved step."""
    env = make(n_runs=1, executor="slurm", timeout_min=10)
    r, starts, info = _preempt_and_finish(env, rows, monkeypatch, ["scancel", "--signal=USR2"])
    resumed = int(starts[1].split()[0].removeprefix("checkpoint-"))
    assert len(starts) == 2 and resumed >= info["at"]
    assert info["stats"]["resumed_from"] == f"checkpoint-{resumed}"
    assert [p["step"] for p in info["stats"]["loss_curve"]] == list(range(1, 17))
    assert len((info["workdir"] / "requeues.log").read_text().splitlines()) == 1
    assert r.attempts == 1 and r.metadata["requeues"] == 1


PIPE = """\
[experiment]
name = "pipe-data"
registry = "{root}/reg.duckdb"

[[axes]]
name = "tool_diversity"
kind = "diversity"
unit = "tools"
min = 4
max = 8

[[axes]]
name = "task_count"
kind = "diversity"
unit = "tasks"
min = 16
max = 32
integer = true

[[ladder]]
name = "t1"
hidden_size = 16
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 3
batch_size = 2

[[ladder]]
name = "t2"
hidden_size = 32
num_layers = 1
num_heads = 2
vocab_size = 512
max_steps = 3
batch_size = 2

[probe]
sample_size = 8
train_steps = 3

[executor]
kind = "slurm"
folder = "{root}/runs"
max_parallel = 4
dataset_cpus = 1
dataset_mem_gb = 1
"""


def test_datasets_are_built_by_a_cpu_array_the_run_arrays_wait_for(tmp_path):
    from grid.models import RunSpec
    from grid.registry import Registry
    from pipeline.job import COMPLETE_MARKER
    from slurm.submit import read_manifests
    from toolscale.config import load_config

    (tmp_path / "pipe.toml").write_text(PIPE.format(root=tmp_path))
    cfg = load_config(tmp_path / "pipe.toml")
    recipes = [{"tool_diversity": 6.0, "task_count": 16.0}, {"tool_diversity": 4.0, "task_count": 16.0}]
    runs = [RunSpec(run_id=f"d-{s}-{i}", experiment="pipe-data", design_version="v", recipe=rec, model_size=s)
            for i, rec in enumerate(recipes) for s in ("t1", "t2")]
    with Registry(cfg.experiment.registry) as reg:
        reg.ensure_experiment("pipe-data", axes=["tool_diversity", "task_count"])
        reg.add_runs(runs)
    rep = launch(cfg, cfg.experiment.registry)
    try:
        (manifest,) = read_manifests(LaunchPaths.of(tmp_path / "runs"), "pipe-data")
        data_job = manifest.dataset_job
        assert data_job and rep.arrays == 2  # one run array per rung, after the dataset array
        for job_id in rep.job_ids.values():
            shown = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout
            assert f"Dependency=afterany:{data_job}" in shown, shown
    finally:  # the pipeline runs themselves are not what this test is about
        subprocess.run(["scancel", *rep.job_ids.values()], capture_output=True)
    deadline = time.monotonic() + 300
    tasks = [f"{data_job}_0", f"{data_job}_1"]
    while time.monotonic() < deadline:
        states = slurm_states(tasks)
        if len(states) == 2 and all(s.status in ("done", "failed", "cancelled") for s in states.values()):
            break
        time.sleep(1)
    assert {s.raw.split()[0] for s in slurm_states(tasks).values()} == {"COMPLETED"}
    built = [p for p in (tmp_path / "runs" / "datasets").iterdir() if (p / COMPLETE_MARKER).exists()]
    assert len(built) == 2  # two recipes, two datasets, shared by both rungs
    from pipeline.job import preparation

    assert preparation(cfg, runs, tmp_path / "runs" / "datasets") == []  # a relaunch submits no dataset array


def test_a_retry_cancels_the_job_it_replaces(make, rows, monkeypatch):
    """A run recorded failed while its job still runs (a lost node that comes back, a stale sacct): the retry
    scancels that job first, so the two never train the run at once."""
    from grid.registry import Registry
    from slurm.sync import sync

    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "300")
    env = make(n_runs=1, executor="slurm", max_attempts=2)
    rep = launch(env.config, env.registry, job_kind="sleeper")
    old = rep.job_ids[env.run_ids[0]]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (slurm_states([old]).get(old) is None
                                           or slurm_states([old])[old].raw.split()[0] != "RUNNING"):
        time.sleep(0.5)
    with Registry(env.registry) as reg:
        reg.set_status([env.run_ids[0]], "failed", error="job state NODE_FAIL (job lost)")
    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "0")
    out = sync(env.registry, config=env.config)
    assert out.retried == env.run_ids
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not slurm_states([old])[old].raw.startswith("CANCELLED"):
        time.sleep(0.5)
    assert slurm_states([old])[old].raw.startswith("CANCELLED")
    final = wait(env.registry, config=env.config, poll_s=1, timeout_s=200)
    r = rows(env)[env.run_ids[0]]
    assert final.counts["done"] == 1 and r.attempts == 2 and r.job_id != old
