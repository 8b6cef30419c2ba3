"""launch / sync / cancel through the debug (in-process) and local (subprocess) executors."""

from __future__ import annotations

import json
import os
import time

import pytest

from grid.models import RunSpec
from grid.registry import Registry
from slurm.errors import SubmitError, UnknownJobKindError
from slurm.launcher import cancel, launch
from slurm.paths import LaunchPaths
from slurm.submit import read_manifests
from slurm.sync import sync, wait


def test_debug_launch_runs_every_pending_run_and_ingests(make, rows):
    env = make(n_runs=3, sizes=("s", "m"))
    rep = launch(env.config, env.registry, executor="debug", job_kind="succeed")
    assert sorted(rep.submitted) == sorted(env.run_ids)
    assert rep.arrays == 2  # one submission per ladder rung
    got = rows(env)
    assert {r.status for r in got.values()} == {"done"}
    assert got[env.run_ids[1]].metrics == {"toy/score": 2.0}
    assert all(r.attempts == 1 and r.job_id.startswith("DEBUG_") for r in got.values())
    assert got[env.run_ids[0]].train_flops == pytest.approx(1.2e7)
    again = sync(env.registry, config=env.config)
    assert again.ingested == 0 and again.duplicate == len(env.run_ids)
    assert launch(env.config, env.registry, executor="debug", job_kind="succeed").submitted == []


def test_each_launch_gets_a_fresh_submitit_folder_and_manifest(make):
    env = make(n_runs=2)
    a = launch(env.config, env.registry, executor="debug", job_kind="boom")
    b = launch(env.config, env.registry, executor="debug", job_kind="succeed", resume=True)
    assert a.launch_id != b.launch_id
    manifests = read_manifests(LaunchPaths.of(env.folder), env.config.experiment.name)
    assert [m.launch_id for m in manifests] == [a.launch_id, b.launch_id]
    assert manifests[0].submitit_folder != manifests[1].submitit_folder
    assert set(manifests[1].jobs) == set(env.run_ids)


def test_raising_job_is_failed_with_traceback_and_retried_up_to_max_attempts(make, rows):
    env = make(n_runs=2, max_attempts=3)
    launch(env.config, env.registry, executor="debug", job_kind="boom")
    for _ in range(5):
        sync(env.registry, config=env.config)
    for r in rows(env).values():
        assert r.status == "failed"
        assert r.attempts == 3
        assert "RuntimeError: boom in" in r.error and "Traceback" in r.error
    with Registry(env.registry, read_only=True) as reg:
        events = [e for e, _ in reg.events(env.run_ids[0])]
    assert events.count("submitted") == 3 and events.count("failed") == 3
    # earlier attempts' result files are kept aside, never re-ingested
    kept = sorted(p.name for p in (env.folder / "attempts").iterdir())
    assert f"{env.run_ids[0]}.1.result.json" in kept


def test_flaky_job_succeeds_on_retry(make, rows):
    env = make(n_runs=1)
    launch(env.config, env.registry, executor="debug", job_kind="flaky")
    assert rows(env)[env.run_ids[0]].status == "failed"
    rep = sync(env.registry, config=env.config)
    assert rep.retried == env.run_ids
    sync(env.registry, config=env.config)
    r = rows(env)[env.run_ids[0]]
    assert (r.status, r.attempts, r.error) == ("done", 2, None)


def test_no_retry_leaves_failed_runs(make, rows):
    env = make(n_runs=1)
    launch(env.config, env.registry, executor="debug", job_kind="boom")
    rep = sync(env.registry, config=env.config, retry=False)
    assert rep.retried == [] and rows(env)[env.run_ids[0]].attempts == 1


def test_truncated_result_file_is_reported_not_ingested(make, rows):
    env = make(n_runs=2)
    launch(env.config, env.registry, executor="debug", job_kind="succeed")
    bad = LaunchPaths.of(env.folder).result("sl-test-s-9")
    good_text = LaunchPaths.of(env.folder).result(env.run_ids[0]).read_text()
    bad.write_text(good_text[: len(good_text) // 2])
    rep = sync(env.registry, config=env.config)
    assert rep.ingested == 0
    assert any("sl-test-s-9.result.json" in p and "truncated" in p for p in rep.problems)


def test_truncated_result_of_a_live_run_keeps_it_out_of_done(make, rows):
    env = make(n_runs=1)
    with Registry(env.registry) as reg:
        reg.mark_submitted({env.run_ids[0]: "DEBUG_1"})
    path = LaunchPaths.of(env.folder).result(env.run_ids[0])
    path.parent.mkdir(parents=True)
    path.write_text('{"run_id": "%s", "experiment": "sl-test", "status": "do' % env.run_ids[0])
    rep = sync(env.registry, config=env.config, retry=False)
    assert rep.ingested == 0
    assert any("sl-test-s-0.result.json: not a valid result file (truncated" in p for p in rep.problems)
    assert rows(env)[env.run_ids[0]].status == "submitted"


def test_unknown_job_kind_is_a_usage_error_and_runs_stay_pending(make, rows):
    env = make(n_runs=1)
    with pytest.raises(UnknownJobKindError, match="unknown job kind 'nope'; known: .*pipeline"):
        launch(env.config, env.registry, executor="debug", job_kind="nope")
    assert rows(env)[env.run_ids[0]].status == "pending"


def test_bad_extra_sbatch_flag_is_a_submit_error(tmp_path, make, rows):
    env = make(n_runs=1, slurm='[executor.slurm]\nadditional_parameters = { time = "5" }')
    with pytest.raises(SubmitError, match="'time' is set by toolscale"):
        launch(env.config, env.registry, executor="debug", job_kind="succeed")
    assert rows(env)[env.run_ids[0]].status == "pending"


def test_local_executor_starts_the_largest_runs_first(make, rows):
    env = make(n_runs=3, executor="local", max_parallel=1)
    with Registry(env.registry) as reg:  # planned FLOPs rising with the run index
        reg.add_runs([RunSpec(run_id="z-big", experiment="sl-test", design_version="v1", recipe={"tool_diversity": 9.0},
                              model_size="s", train_flops=1e15)])
    rep = launch(env.config, env.registry, job_kind="succeed")
    assert rep.submitted == ["z-big"] and sorted(rep.left_pending) == sorted(env.run_ids)
    wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60)
    assert rows(env)["z-big"].status == "done"


@pytest.mark.integration
def test_local_executor_runs_subprocesses_with_max_parallel(make, rows):
    env = make(n_runs=3, executor="local", max_parallel=2)
    rep = launch(env.config, env.registry, job_kind="succeed")
    assert len(rep.submitted) == 2 and len(rep.left_pending) == 1
    final = wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60,
                 top_up=lambda: launch(env.config, env.registry, job_kind="succeed"))
    assert final.counts["done"] == 3 and final.active == 0
    got = rows(env)
    pids = {json.loads(json.dumps(r.metadata))["pid"] for r in got.values()}
    assert os.getpid() not in pids and len(pids) == 3  # each run in its own process


@pytest.mark.integration
def test_cancel_pending_stops_the_whole_experiment(make, rows, monkeypatch, capsys):
    from toolscale.cli import main

    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "60")
    env = make(n_runs=3, executor="local", max_parallel=1)
    rep = launch(env.config, env.registry, job_kind="sleeper")
    assert len(rep.submitted) == 1 and len(rep.left_pending) == 2
    assert main(["cancel", "--config", str(env.config_path), "--pending", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["cancelled"]) == sorted(env.run_ids) and out["job_ids"] == [rep.job_ids[rep.submitted[0]]]
    assert {r.status for r in rows(env).values()} == {"cancelled"}
    assert launch(env.config, env.registry, job_kind="succeed").submitted == []  # nothing pending is left
    from slurm.submit import LOCAL_JOBS

    job = LOCAL_JOBS.get(str(rep.job_ids[rep.submitted[0]]))
    if job is not None:  # the signalled job ends; what it leaves behind changes no state
        assert job.wait(20)
    sync(env.registry, config=env.config)
    assert {r.status for r in rows(env).values()} == {"cancelled"}


@pytest.mark.integration
def test_local_cancel_then_resume(make, rows, monkeypatch):
    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "60")
    env = make(n_runs=1, executor="local")
    rep = launch(env.config, env.registry, job_kind="sleeper")
    pid = int(rep.job_ids[env.run_ids[0]])
    out = cancel(env.config, env.registry, experiment=env.config.experiment.name)
    assert out.cancelled == env.run_ids and out.errors == []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sync(env.registry, config=env.config).active:
        time.sleep(0.2)
    from slurm.submit import LOCAL_JOBS
    job = LOCAL_JOBS.get(str(pid))
    if job is not None:
        assert job.wait(20)
    assert rows(env)[env.run_ids[0]].status == "cancelled"
    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "0")
    assert launch(env.config, env.registry, job_kind="succeed").submitted == []  # plain launch: pending only
    again = launch(env.config, env.registry, job_kind="sleeper", resume=True)
    assert again.submitted == env.run_ids
    wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60)
    r = rows(env)[env.run_ids[0]]
    assert (r.status, r.attempts) == ("done", 2)


@pytest.mark.integration
def test_jobs_launched_with_sigint_ignored_stay_cancellable(make, monkeypatch):
    """`nohup toolscale launch ... &` starts with SIGINT ignored; its local jobs must still stop on cancel."""
    import signal

    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "60")
    env = make(n_runs=1, executor="local")
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        rep = launch(env.config, env.registry, job_kind="sleeper")
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the caller's disposition is restored
    finally:
        signal.signal(signal.SIGINT, before)
    out = cancel(env.config, env.registry, experiment=env.config.experiment.name)
    assert out.cancelled == env.run_ids and out.errors == []
    from slurm.submit import LOCAL_JOBS
    job = LOCAL_JOBS[str(rep.job_ids[env.run_ids[0]])]
    assert job.wait(20)  # False if the job ignored the SIGINT
    assert job.state == "INTERRUPTED"


@pytest.mark.integration
def test_launcher_killed_between_submit_and_registry_update_is_recovered_by_sync(make, rows, killed_launch):
    env = make(n_runs=2, executor="local")
    killed_launch(env)
    from slurm.submit import LOCAL_JOBS
    LOCAL_JOBS.clear()  # a new process: job states come from the process table, not from submitit objects
    assert {r.status for r in rows(env).values()} == {"pending"}
    final = wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60)
    got = rows(env)
    assert final.counts["done"] == 2
    assert all(r.status == "done" and r.attempts == 1 for r in got.values())


def test_slurm_without_sbatch_is_a_clear_error(make, rows, monkeypatch):
    env = make(n_runs=1)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SubmitError, match="--executor slurm needs sbatch and srun on PATH"):
        launch(env.config, env.registry, executor="slurm", job_kind="succeed")
    assert rows(env)[env.run_ids[0]].status == "pending"


def test_sync_with_the_wrong_folder_changes_no_state(make, rows, tmp_path):
    env = make(n_runs=1)
    with Registry(env.registry) as reg:
        reg.mark_submitted({env.run_ids[0]: "123_0"})
    rep = sync(env.registry, config=env.config, folder=tmp_path / "elsewhere")
    assert rep.transitions == {} and rows(env)[env.run_ids[0]].status == "submitted"
    assert any("job 123_0 is in no launch manifest" in p and "wrong --folder" in p for p in rep.problems)


def test_unanswering_scheduler_still_ingests_results(make, rows, monkeypatch):
    import slurm.sync as sync_mod
    from slurm.errors import LaunchError

    env = make(n_runs=2)
    launch(env.config, env.registry, executor="debug", job_kind="succeed")  # results written and ingested
    with Registry(env.registry) as reg:  # pretend one run is live on SLURM and its result is new
        reg.mark_submitted({env.run_ids[0]: "55_0"})
    manifest = read_manifests(LaunchPaths.of(env.folder))[0]
    from toolscale.files import atomic_write_json
    atomic_write_json(LaunchPaths.of(env.folder).manifest("fake"), manifest.model_copy(
        update={"launch_id": "fake", "executor": "slurm", "jobs": {env.run_ids[0]: "55_0"}}).model_dump(mode="json"))
    path = LaunchPaths.of(env.folder).result(env.run_ids[0])
    path.write_text(path.read_text().replace('"score": 1.0', '"score": 1.5'))

    def down(ids):
        raise LaunchError("cannot read job states: sacct said ['connection refused']")

    monkeypatch.setattr(sync_mod, "slurm_states", down)
    rep = sync(env.registry, config=env.config)
    assert rep.ingested == 1 and "cannot read job states" in rep.problems[-1]
    assert rows(env)[env.run_ids[0]].status == "done" and rows(env)[env.run_ids[0]].metrics["toy/score"] == 1.5
    # the run was launched again, so its new result is applied; the earlier score is kept, not lost
    with Registry(env.registry, read_only=True) as reg:
        history = reg.con.execute("SELECT run_id, field, old_value, new_value FROM run_history").fetchall()
    assert history == [(env.run_ids[0], "toy/score", "1.0", "1.5")]


def test_refused_retry_is_reported_and_runs_stay_failed(make, rows, monkeypatch):
    env = make(n_runs=1)
    launch(env.config, env.registry, executor="debug", job_kind="boom")
    bad = env.config.model_copy(update={"ladder": [s.model_copy(update={"name": "other"})
                                                   for s in env.config.ladder]})
    rep = sync(env.registry, config=bad)
    assert rep.retried == [] and any("retry of 1 failed runs not submitted" in p and "'s'" in p
                                     for p in rep.problems)
    r = rows(env)[env.run_ids[0]]
    assert (r.status, r.attempts) == ("failed", 1)


def test_a_job_id_reused_by_another_run_is_not_taken_for_this_runs_job(make, rows, monkeypatch):
    import slurm.sync as sync_mod
    from datetime import UTC, datetime

    from slurm.models import JobState, LaunchManifest
    from toolscale.files import atomic_write_json

    env = make(n_runs=2)
    a, b = env.run_ids
    paths = LaunchPaths.of(env.folder)
    m = LaunchManifest(launch_id="new", experiment="sl-test", executor="slurm", job_kind="succeed",
                       submitit_folder=str(paths.submitit_folder("new")), created_at=datetime.now(UTC), jobs={b: "5"})
    atomic_write_json(paths.manifest("new"), m.model_dump(mode="json"))
    with Registry(env.registry) as reg:
        reg.mark_submitted({a: "5", b: "5"})  # a's job 5 is from before a cluster reset, b's is the new job 5
    monkeypatch.setattr(sync_mod, "slurm_states", lambda ids: {"5": JobState(job_id="5", raw="RUNNING",
                                                                              status="running")})
    rep = sync(env.registry, config=env.config, retry=False)
    assert rep.transitions == {b: "running"}
    assert rows(env)[a].status == "submitted" and any(f"run {a}: job 5 is in no launch manifest" in p
                                                       for p in rep.problems)


@pytest.mark.integration
def test_local_job_dying_without_result_is_failed_with_its_log_tail(make, rows):
    env = make(n_runs=1, executor="local", max_attempts=1)
    launch(env.config, env.registry, job_kind="crash")
    wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60)
    r = rows(env)[env.run_ids[0]]
    assert r.status == "failed" and "ended without writing a result file" in r.error
    assert f"crashing hard in {env.run_ids[0]}" in r.error


_SWALLOWS_ONE = """
import signal, sys, time
seen = []
signal.signal(signal.SIGINT, lambda *a: sys.exit(0) if seen else seen.append(1))  # the first SIGINT is lost
print("ready", flush=True)
time.sleep(60)
"""


def _started(script: str):
    import subprocess
    import sys

    import psutil

    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc, psutil.Process(proc.pid).create_time()


def test_cancel_signals_again_a_controller_that_lost_its_first_sigint():
    """A SIGINT that lands while a controller imports can be swallowed; cancel sends it again until it exits."""
    from slurm.launcher import _stop_local

    proc, started = _started(_SWALLOWS_ONE)
    t0 = time.monotonic()
    assert _stop_local({str(proc.pid): started}, wait_s=10, resignal_s=0.3) == []
    assert proc.wait(timeout=5) == 0 and time.monotonic() - t0 < 5


def test_cancel_names_a_controller_that_will_not_stop():
    from slurm.launcher import _stop_local

    proc, started = _started(_SWALLOWS_ONE.replace("sys.exit(0) if seen else seen.append(1)", "None"))
    try:
        errors = _stop_local({str(proc.pid): started}, wait_s=1.0, resignal_s=0.3)
        assert errors == [f"job {proc.pid}: still running 1 s after SIGINT; cancel again, or kill its PID"]
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.integration
def test_launcher_killed_between_two_arrays_loses_neither(make, rows, monkeypatch):
    """Two rungs, two arrays: the launcher dies as it prepares the second. The first array is in the manifest
    and the registry, its jobs finish and are ingested; the second rung's runs stay pending for the next launch."""
    import slurm.submit as submit
    from slurm.submit import LOCAL_JOBS

    env = make(n_runs=2, sizes=("s", "m"), executor="local")
    real = submit._archive_old_result

    def dies_on_the_second_rung(paths, run):
        if run.model_size == "m":
            raise KeyboardInterrupt("launcher killed between arrays")
        return real(paths, run)

    monkeypatch.setattr(submit, "_archive_old_result", dies_on_the_second_rung)
    with pytest.raises(KeyboardInterrupt):
        launch(env.config, env.registry, job_kind="succeed")
    monkeypatch.undo()
    (manifest,) = read_manifests(LaunchPaths.of(env.folder), env.config.experiment.name)
    first = [r for r in env.run_ids if "-s-" in r]
    assert sorted(manifest.jobs) == sorted(first)
    assert {k: r.status for k, r in rows(env).items() if k in first} == {k: "submitted" for k in first}
    LOCAL_JOBS.clear()  # a new process: job states come from the manifest and the process table
    wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60)
    got = rows(env)
    assert all(got[k].status == "done" and got[k].attempts == 1 for k in first)
    assert {got[k].status for k in env.run_ids if k not in first} == {"pending"}
    again = launch(env.config, env.registry, job_kind="succeed")
    assert sorted(again.submitted) == sorted(k for k in env.run_ids if k not in first)
    assert wait(env.registry, config=env.config, poll_s=0.3, timeout_s=60).counts["done"] == 4


def test_arms_sharing_stages_start_one_per_group_first():
    """Arms that differ only in a stage axis share SFT and the warm start; a second arm started beside the first
    would wait for it in its slot, so the first arm of every group goes first."""
    from slurm.launcher import distinct_groups_first

    def run(rid, tools, grpo, seed=0):
        return RunSpec(run_id=rid, experiment="e", design_version="v1", recipe={"tool_diversity": tools,
                       "grpo_steps": grpo}, model_size="s", seed=seed, train_tokens=1e6)

    a0, a1, b0, b1, c0 = run("a0", 1, 0), run("a1", 1, 60), run("b0", 2, 0), run("b1", 2, 60), run("c0", 1, 0, 1)
    order = distinct_groups_first([a0, a1, b0, b1, c0], [], {"grpo_steps"})
    assert [r.run_id for r in order] == ["a0", "b0", "c0", "a1", "b1"]
    # a group whose arm is already running waits behind the groups that have not started
    assert [r.run_id for r in distinct_groups_first([a1, b0, b1], [a0], {"grpo_steps"})] == ["b0", "a1", "b1"]
    # no stage axis: every run is its own group, the order is kept
    assert [r.run_id for r in distinct_groups_first([a0, a1, b0], [b1], set())] == ["a0", "a1", "b0"]
