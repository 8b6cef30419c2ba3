"""Signals in a job: SIGTERM mid-training saves a checkpoint at that step and exits without a result; the next
attempt resumes from it. Failure classes decide retries; the run lease refuses a second live job."""

from __future__ import annotations

import json
import os
import signal

import pytest

from grid.models import RunSpec
from grid.results import read_results
from slurm.gpu_time import read_attempts
from slurm.job import JobRunner
from slurm.jobs import job_kind_ref
from slurm.locks import LEASE_FILE
from slurm.preemption import NOT_RETRIED, StopHandlers, classify
from slurm.sync import map_slurm_state

RUN = RunSpec(run_id="r-p", experiment="e", design_version="v", recipe={"tool_diversity": 3.0}, model_size="s")


def _runner(tmp_path, kind, **context):
    return JobRunner(kind, job_kind_ref(kind), RUN.model_dump(mode="json"), str(tmp_path / "work"),
                     str(tmp_path / "results"), context={"config": {}, **context})


def test_sigterm_mid_training_saves_at_that_step_and_the_next_attempt_resumes(tmp_path, monkeypatch):
    """The real signal path in this process: SIGTERM at step 5 of 12 -> checkpoint-5 written, no result, exit
    143; the restarted job resumes from checkpoint-5 and finishes; checkpoints are removed after success."""
    monkeypatch.setenv("TOOLSCALE_TEST_SIGNAL_AT", "5")
    runner = _runner(tmp_path, "sft_tiny")
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        runner()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before  # handlers restored
    model = tmp_path / "work" / "model"
    assert sorted(p.name for p in (model / "checkpoints").glob("checkpoint-*")) == ["checkpoint-5"]
    assert not (tmp_path / "results").exists()  # no result: SLURM requeues (or the cancel stands)
    assert [a["outcome"] for a in read_attempts(tmp_path / "work")] == ["stopped"]
    assert not (tmp_path / "work" / LEASE_FILE).exists()  # let go on the way out
    assert runner() == {"run_id": "r-p", "status": "done"}
    res = read_results(tmp_path / "results")[0][0][0]
    stats = json.loads((model / "train_stats.json").read_text())
    assert stats["resumed_from"] == "checkpoint-5" and res.train.steps == 12
    assert [p["step"] for p in stats["loss_curve"]] == list(range(1, 13))
    assert (tmp_path / "work" / "starts.log").read_text().split("\n")[:2] == ["fresh job None", "checkpoint-5 job None"]
    assert not (model / "checkpoints").exists()  # deleted after success
    assert res.extra["attempts_in_job"] == 2 and res.extra["gpu_seconds"] == 0.0


def test_a_second_live_job_of_the_same_run_is_refused_as_duplicate(tmp_path):
    lease = tmp_path / "work" / LEASE_FILE
    lease.parent.mkdir(parents=True)
    lease.write_text(json.dumps({"host": "node-7", "pid": 1, "job": "99_3", "token": "t", "beat": 0, "since": 0}))
    assert _runner(tmp_path, "succeed", lease_wait_s=0.3)()["status"] == "failed"
    res = read_results(tmp_path / "results")[0][0][0]
    assert "is held by job 99_3 on node-7" in res.error and res.extra["failure_class"] == "duplicate"
    assert json.loads(lease.read_text())["job"] == "99_3"  # the other job's lease is untouched


def test_failures_are_classified_for_retries(tmp_path):
    assert _runner(tmp_path, "boom")()["status"] == "failed"
    res = read_results(tmp_path / "results")[0][0][0]
    assert res.extra["failure_class"] == "error"
    assert classify("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 74.00 GiB") == "oom"
    assert classify("job state OUT_OF_MEMORY (job 4_1)") == "oom"
    assert classify("train.templates.TemplateError: the chat template ... gives zero loss tokens") == "config"
    assert classify("job state PREEMPTED (job 4_2)") == "preempted"
    assert classify("timed out (TIMEOUT) and was not requeued (job 4_3)") == "timeout"
    assert classify("job state NODE_FAIL (job 4_4)") == "node"
    assert {"oom", "config", "duplicate"} == NOT_RETRIED
    assert map_slurm_state("PREEMPTED") == "failed"  # final: a requeued job shows its new record instead


def test_stop_handlers_request_a_stop_and_restore(tmp_path):
    from slurm.preemption import stop_requested

    before = signal.getsignal(signal.SIGUSR2)
    with StopHandlers(grace_s=0) as stop:
        assert stop.active
        os.kill(os.getpid(), signal.SIGUSR2)
        assert stop_requested().startswith("SIGUSR2 received (time limit near)")
        with pytest.raises(SystemExit):  # no submitit handler to requeue through: exit
            stop.finish()
    assert signal.getsignal(signal.SIGUSR2) is before


def test_a_job_that_does_not_save_in_time_is_handed_to_submitits_handler():
    """No save within grace_s of SIGUSR2: the previous handler (submitit's checkpoint-and-requeue) runs."""
    import time

    called = []
    before = signal.signal(signal.SIGUSR2, lambda signum, frame: called.append(signum))
    try:
        with StopHandlers(grace_s=0.2):
            os.kill(os.getpid(), signal.SIGUSR2)
            assert called == []  # the first signal only asks for a save
            deadline = time.monotonic() + 10
            while not called and time.monotonic() < deadline:
                time.sleep(0.05)
        assert called == [signal.SIGUSR2]
    finally:
        signal.signal(signal.SIGUSR2, before)


def test_out_of_memory_is_not_retried_an_ordinary_failure_is(make, rows):
    from slurm.launcher import launch
    from slurm.sync import sync

    env = make(n_runs=1, executor="debug", max_attempts=3)
    launch(env.config, env.registry, job_kind="oom")
    first = sync(env.registry, config=env.config)
    r = rows(env)[env.run_ids[0]]
    assert r.status == "failed" and r.attempts == 1 and "CUDA out of memory" in r.error
    assert first.retried == []  # deterministic: the same OOM again
    other = make(n_runs=1, executor="debug", max_attempts=3, name="sl-boom")
    launch(other.config, other.registry, job_kind="boom")
    assert sync(other.registry, config=other.config).retried == other.run_ids
