"""Reliability against the real single-node SLURM cluster (``slurm/dev-cluster.sh up``; ``make test`` does it).

Skipped when no dev cluster answers. Each test uses the ``debug`` partition of the
dev cluster with the small job kinds of ``tests/slurm/kinds.py``.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from grid.registry import Registry
from slurm.errors import SubmitError
from slurm.launcher import launch
from slurm.paths import LaunchPaths
from slurm.sync import slurm_states, sync, wait

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300), pytest.mark.usefixtures("dev_cluster")]


def _wait_state(job_id: str, wanted: set[str], timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    state = "UNKNOWN"
    while time.monotonic() < deadline:
        st = slurm_states([job_id]).get(job_id)
        state = st.raw if st else "UNKNOWN"
        if state.split()[0] in wanted:
            return state
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} never reached {wanted}; last state {state}")


def test_array_of_runs_done_and_truncated_file_reported(make, rows):
    env = make(n_runs=4, executor="slurm", sizes=("s",))
    rep = launch(env.config, env.registry, job_kind="succeed")
    assert rep.arrays == 1
    arrays = {j.split("_")[0] for j in rep.job_ids.values()}
    assert len(arrays) == 1 and sorted(j.split("_")[1] for j in rep.job_ids.values()) == ["0", "1", "2", "3"]
    final = wait(env.registry, config=env.config, poll_s=0.5, timeout_s=120)
    assert final.counts["done"] == 4
    got = rows(env)
    assert {r.job_id for r in got.values()} == set(rep.job_ids.values())
    assert got[env.run_ids[2]].metrics == {"toy/score": 3.0}
    bad = LaunchPaths.of(env.folder).result("sl-test-s-99")
    bad.write_text(LaunchPaths.of(env.folder).result(env.run_ids[0]).read_text()[:50])
    again = sync(env.registry, config=env.config)
    assert again.ingested == 0 and any("sl-test-s-99" in p and "truncated" in p for p in again.problems)


def test_raising_job_failed_with_traceback_and_retried(make, rows):
    env = make(n_runs=2, executor="slurm", max_attempts=2)
    launch(env.config, env.registry, job_kind="boom")
    final = wait(env.registry, config=env.config, poll_s=0.5, timeout_s=120)
    assert final.counts["failed"] == 2 and len(final.retried) == 0
    for r in rows(env).values():
        assert r.attempts == 2 and "RuntimeError: boom in" in r.error and "Traceback" in r.error
        with Registry(env.registry, read_only=True) as reg:
            assert [e for e, _ in reg.events(r.run_id)].count("submitted") == 2


def test_scancel_mid_run_is_recorded_cancelled_and_resume_reruns(make, rows, monkeypatch):
    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "120")
    env = make(n_runs=1, executor="slurm")
    rep = launch(env.config, env.registry, job_kind="sleeper")
    job_id = rep.job_ids[env.run_ids[0]]
    _wait_state(job_id, {"RUNNING"})
    subprocess.run(["scancel", job_id], check=True)
    _wait_state(job_id, {"CANCELLED"})
    out = sync(env.registry, config=env.config)
    assert out.transitions == {env.run_ids[0]: "cancelled"} and out.retried == []
    r = rows(env)[env.run_ids[0]]
    assert r.status == "cancelled" and "CANCELLED" in r.error
    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "0")
    again = launch(env.config, env.registry, job_kind="sleeper", resume=True)
    assert again.submitted == env.run_ids and again.job_ids[env.run_ids[0]] != job_id
    wait(env.registry, config=env.config, poll_s=0.5, timeout_s=120)
    r = rows(env)[env.run_ids[0]]
    assert (r.status, r.attempts) == ("done", 2)


def test_launcher_killed_between_submit_and_sync_is_recovered(make, rows, killed_launch):
    env = make(n_runs=3, executor="slurm")
    killed_launch(env)
    final = wait(env.registry, config=env.config, poll_s=0.5, timeout_s=120)
    assert final.counts["done"] == 3
    assert all(r.attempts == 1 and "_" in r.job_id for r in rows(env).values())


@pytest.mark.parametrize(("slurm", "cpus", "message"), [
    ('[executor.slurm]\npartition = "nopart"', 1, "invalid partition specified: nopart"),
    ("", 512, "More processors requested than permitted"),
])
def test_bad_submit_parameters_clear_error_runs_stay_pending(make, rows, slurm, cpus, message):
    env = make(n_runs=2, executor="slurm", slurm=slurm, cpus=cpus)
    with pytest.raises(SubmitError, match=message) as err:
        launch(env.config, env.registry, job_kind="succeed")
    assert "model size 's'" in str(err.value) and "\n" not in str(err.value)
    assert {r.status for r in rows(env).values()} == {"pending"}
    assert all(r.attempts == 0 for r in rows(env).values())


def test_time_limit_checkpoint_requeue_resume_finish(make, rows, monkeypatch):
    """A job past its one-minute SLURM time limit saves, is requeued and finishes. About 70 s: SLURM's smallest
    time limit is a minute, and the job must outlive it at least once."""
    # 60 s limit: USR2 comes 10-40 s after each start (see slurm.resources), 45 s of work needs >= 2 starts
    monkeypatch.setenv("TOOLSCALE_TEST_STEPS", "90")
    monkeypatch.setenv("TOOLSCALE_TEST_STEP_S", "0.5")
    env = make(n_runs=1, executor="slurm", timeout_min=1)
    launch(env.config, env.registry, job_kind="counter")
    final = wait(env.registry, config=env.config, poll_s=1, timeout_s=280)
    r = rows(env)[env.run_ids[0]]
    assert final.counts["done"] == 1, r.error
    assert r.attempts == 1  # requeued by submitit inside one submission, not retried
    starts = r.metadata["starts"]
    assert len(starts) >= 2 and starts[0] == 0 and all(b > a for a, b in zip(starts, starts[1:]))
    assert r.metadata["steps"] == 90 and r.metadata["requeues"] >= 1


def test_toolscale_cancel_scancels_the_array_and_records_it(make, rows, monkeypatch, capsys):
    from toolscale.cli import main

    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "120")
    env = make(n_runs=2, executor="slurm")
    rep = launch(env.config, env.registry, job_kind="sleeper")
    for job_id in rep.job_ids.values():
        _wait_state(job_id, {"RUNNING"})
    assert main(["cancel", "--config", str(env.config_path), "--json"]) == 0
    assert "cancelled" in capsys.readouterr().out
    for job_id in rep.job_ids.values():
        _wait_state(job_id, {"CANCELLED"})
    out = sync(env.registry, config=env.config)
    assert out.retried == [] and out.active == 0
    assert {r.status for r in rows(env).values()} == {"cancelled"}


def test_job_dying_without_result_is_failed_from_sacct_and_retried(make, rows):
    env = make(n_runs=1, executor="slurm", max_attempts=2)
    launch(env.config, env.registry, job_kind="crash")
    final = wait(env.registry, config=env.config, poll_s=0.5, timeout_s=120)
    r = rows(env)[env.run_ids[0]]
    assert final.counts["failed"] == 1 and r.attempts == 2
    assert "job state FAILED" in r.error and f"crashing hard in {env.run_ids[0]}" in r.error
