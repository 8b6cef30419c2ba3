"""The warm local executor (slurm/warm.py, slurm/forkserver.py): one fork server per launcher, a fresh fork per job."""

from __future__ import annotations

import os
import signal
import time

import pytest

from grid.registry import Registry
from slurm.launcher import launch
from slurm.sync import sync, wait

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _fresh_pools():
    """Each test starts without fork servers and leaves none behind."""
    from slurm.warm import close_pools

    close_pools()
    yield
    close_pools()


def _extra(env, run_id):
    with Registry(env.registry, read_only=True) as reg:
        return {r.run_id: r for r in reg.runs(env.config.experiment.name)}[run_id].metadata


def test_jobs_are_fresh_forks_of_one_preloaded_server_and_leave_no_state_behind(make, rows, monkeypatch):
    from slurm import warm

    monkeypatch.setitem(warm.PRELOAD, "inspect_state", ("wave",))
    monkeypatch.setitem(warm.PRELOAD, "taint", ("wave",))  # the same preload set: the same server
    monkeypatch.setenv("TOOLSCALE_TEST_MARKER", "seen")
    env = make(n_runs=2, executor="local", max_parallel=1)
    first, second = env.run_ids
    launch(env.config, env.registry, job_kind="taint", run_ids=[first])
    wait(env.registry, config=env.config, poll_s=0.2, timeout_s=600)
    (pool,) = warm._POOLS.values()
    launch(env.config, env.registry, job_kind="inspect_state", run_ids=[second])
    wait(env.registry, config=env.config, poll_s=0.2, timeout_s=600)
    assert list(warm._POOLS.values()) == [pool] and pool.alive  # reused, not restarted
    got = rows(env)
    assert got[first].status == got[second].status == "done"
    seen = _extra(env, second)
    assert seen["wave_preloaded"] is True  # imported by the server before the fork
    # (the registry's merge patch drops null values: an absent key is a None)
    assert seen.get("json_taint") is None and seen.get("env_taint") is None and seen["ballast"] is False
    assert seen["pid"] not in (os.getpid(), pool.proc.pid) and str(seen["pid"]) == got[second].job_id
    assert seen["submitit_job_id"] == got[second].job_id and seen["cuda_visible"] == ""
    assert seen["marker"] == "seen" and seen["cwd"] == os.getcwd()  # the launcher's environment at submission


def test_a_crashed_job_fails_with_its_log_tail_and_is_retried_once_on_a_fresh_fork(make, rows):
    from slurm import warm

    env = make(n_runs=2, executor="local", max_attempts=2, max_parallel=2)
    launch(env.config, env.registry, job_kind="crash_once")  # both jobs die on their first attempt
    (server,) = warm._POOLS.values()
    final = wait(env.registry, config=env.config, poll_s=0.2, timeout_s=600)
    assert final.counts["done"] == 2 and list(warm._POOLS.values()) == [server] and server.alive
    for run_id in env.run_ids:
        r = rows(env)[run_id]
        assert (r.status, r.attempts) == ("done", 2)
        with Registry(env.registry, read_only=True) as reg:
            failures = [detail for event, detail in reg.events(run_id) if event == "failed"]
        assert len(failures) == 1 and "ended without writing a result file" in failures[0]
        assert f"crashing once in {run_id}" in failures[0]  # its own log tail
        extra = _extra(env, run_id)
        assert extra["pid"] != extra["crashed_pid"]  # the retry ran in a fresh fork


def test_a_dead_fork_server_is_replaced_at_the_next_submission(make, rows):
    from slurm import warm

    env = make(n_runs=2, executor="local", max_parallel=1)
    launch(env.config, env.registry, job_kind="succeed")
    (pool,) = warm._POOLS.values()
    os.kill(pool.proc.pid, signal.SIGKILL)
    pool.proc.wait(timeout=10)
    final = wait(env.registry, config=env.config, poll_s=0.2, timeout_s=600,
                 top_up=lambda: launch(env.config, env.registry, job_kind="succeed"))
    assert final.counts["done"] == 2
    (fresh,) = warm._POOLS.values()
    assert fresh is not pool and fresh.alive
    assert {r.attempts for r in rows(env).values()} == {1}  # nothing lost, nothing rerun


def test_a_job_past_its_time_limit_is_failed_and_names_the_limit(make, rows, monkeypatch):
    """The rung's timeout_min, shortened here to 1.2 s of the 60 s sleeper (about 2 s)."""
    from slurm import warm

    monkeypatch.setenv("TOOLSCALE_TEST_SLEEP_S", "60")
    real = warm.submit_warm
    monkeypatch.setattr(warm, "submit_warm", lambda *a, **kw: real(*a, **{**kw, "timeout_min": 0.02}))
    env = make(n_runs=1, executor="local", max_attempts=1)
    launch(env.config, env.registry, job_kind="sleeper")
    wait(env.registry, config=env.config, poll_s=0.2, timeout_s=600)
    r = rows(env)[env.run_ids[0]]
    assert r.status == "failed" and "JobTimeout: the job ran past its time limit of 0.02 min" in r.error


def test_a_server_that_cannot_fork_leaves_the_runs_pending(make, rows, monkeypatch):
    from slurm import warm
    from slurm.errors import SubmitError

    env = make(n_runs=2, executor="local")

    def refuse(self, runner, **kw):
        raise warm.LaunchError("the warm executor could not start a job: OSError: no more processes")

    monkeypatch.setattr(warm.WarmPool, "fork", refuse)
    with pytest.raises(SubmitError, match="local jobs not started: .*no more processes"):
        launch(env.config, env.registry, job_kind="succeed")
    assert {r.status for r in rows(env).values()} == {"pending"}
    assert sync(env.registry, config=env.config).counts["pending"] == 2
    time.sleep(0)  # nothing was started, so nothing is left running


def test_map_warm_runs_each_call_in_its_own_fork_and_reports_failures(tmp_path):
    from pathlib import Path

    from slurm.warm import map_warm

    kinds = Path(__file__).with_name("kinds.py")
    got = dict(map_warm(f"{kinds}:pid_plus", [(1, 2), (3, 4), (5, 6)], slots=2, log_dir=tmp_path,
                        preload_as="succeed"))
    assert [got[i]["result"][0] for i in range(3)] == [3, 7, 11]
    assert len({got[i]["result"][1] for i in range(3)} | {os.getpid()}) == 4  # three forks, none of them us
    bad = dict(map_warm(f"{kinds}:raise_value_error", [("nope",)], slots=1, log_dir=tmp_path, preload_as="succeed"))
    assert "ValueError: nope" in bad[0]["error"]
    dead = dict(map_warm(f"{kinds}:die_at_once", [(4,)], slots=1, log_dir=tmp_path, preload_as="succeed"))
    assert "ended without a result" in dead[0]["error"] and "dying without a result" in dead[0]["error"]
