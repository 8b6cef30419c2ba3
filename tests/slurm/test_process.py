"""slurm/process.py: a local job's PID counts only with its recorded start time (PIDs are reused)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from slurm.process import process_start, same_process


def _sleeper() -> subprocess.Popen:
    # SIGINT at its default action even when the test runner was started with it ignored (a background shell)
    return subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(30)"],
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def test_own_process_matches_and_a_different_start_does_not() -> None:
    started = process_start(os.getpid())
    assert started is not None and started <= time.time()
    assert same_process(os.getpid(), started)
    assert not same_process(os.getpid(), started - 5.0)


def test_a_dead_process_is_not_alive() -> None:
    p = _sleeper()
    started = process_start(p.pid)
    p.kill()
    p.wait()
    assert process_start(p.pid) is None and not same_process(p.pid, started)


def test_a_reused_pid_is_neither_alive_nor_signalled() -> None:
    """The job's PID now names another process (started later): cancel leaves it alone, sync calls it done."""
    from slurm.launcher import _signal_local
    from slurm.sync import local_state

    job = _sleeper()
    job_started = process_start(job.pid)
    job.kill()
    job.wait()
    time.sleep(0.05)  # at least a clock tick later, as any reuse of the PID would be
    other = _sleeper()  # stands in for the unrelated process that got the job's PID
    try:
        time.sleep(0.05)
        assert local_state(str(other.pid), job_started).status == "done"
        assert _signal_local(str(other.pid), job_started) is None
        time.sleep(0.2)
        assert other.poll() is None  # not signalled
        assert local_state(str(other.pid), process_start(other.pid)).status == "running"
        assert "no start time recorded" in _signal_local(str(other.pid), None)
        assert other.poll() is None
        assert _signal_local(str(other.pid), process_start(other.pid)) is None  # both match: signalled
        other.wait(timeout=10)
        assert other.returncode == -signal.SIGINT or other.returncode == 1
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()
