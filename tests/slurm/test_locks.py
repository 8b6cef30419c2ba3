"""O_EXCL lock files with a heartbeat: exclusion across processes, stale locks broken, live ones respected."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import time
from pathlib import Path

import pytest

from slurm.locks import LockHeld, exclusive, owner_of, run_lease


def _worker(lock: str, log: str, n: int) -> None:
    for _ in range(n):
        with exclusive(lock, poll_s=0.01):
            with open(log, "a") as f:
                f.write(f"in {os.getpid()}\n")
            time.sleep(0.02)
            with open(log, "a") as f:
                f.write(f"out {os.getpid()}\n")


def test_processes_take_turns(tmp_path):
    lock, log = tmp_path / "x.lock", tmp_path / "log"
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_worker, args=(str(lock), str(log), 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    lines = log.read_text().split("\n")[:-1]
    assert len(lines) == 30
    for a, b in zip(lines[::2], lines[1::2]):  # never two inside at once: every "in" is followed by its "out"
        assert a.startswith("in ") and b == "out " + a.split()[1]
    assert not lock.exists()


def _holder(path: Path, **fields) -> None:
    path.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "job": None, "token": "t",
                                "beat": 0, "since": time.time(), **fields}))


def test_a_dead_local_holder_is_broken_at_once(tmp_path):
    proc = mp.get_context("fork").Process(target=time.sleep, args=(0,))
    proc.start()
    proc.join()
    lock = tmp_path / "d.lock"
    _holder(lock, pid=proc.pid)
    t0 = time.monotonic()
    with exclusive(lock, stale_s=60) as me:
        assert owner_of(lock)["token"] == me["token"]
    assert time.monotonic() - t0 < 10
    assert any(p.name.startswith(".d.lock.stale-") for p in tmp_path.iterdir())


def test_a_remote_holder_without_heartbeat_goes_stale_a_live_one_does_not(tmp_path):
    lock = tmp_path / "r.lock"
    _holder(lock, host="other-node", pid=1, job="77")
    with pytest.raises(LockHeld, match=r"held by job 77 on other-node \(pid 1\)"):
        with exclusive(lock, wait_s=0.3, stale_s=60, what="lock"):
            pass
    assert owner_of(lock)["job"] == "77"  # refused, untouched
    with exclusive(lock, stale_s=0.5, poll_s=0.05):  # no heartbeat for 0.5 s of this process' clock: broken
        pass


def test_the_heartbeat_keeps_a_lock_alive(tmp_path):
    lock = tmp_path / "h.lock"
    with exclusive(lock, beat_s=0.1) as me:
        time.sleep(0.5)
        assert owner_of(lock)["beat"] >= 2
        # another waiter with a short staleness still sees the beat move, so never breaks it
        ctx = mp.get_context("fork")
        child = ctx.Process(target=_wait_short, args=(str(lock),))
        child.start()
        child.join(30)
        assert child.exitcode == 3
        assert owner_of(lock)["token"] == me["token"]


def _wait_short(lock: str) -> None:
    try:
        with exclusive(lock, wait_s=1.0, stale_s=0.4, poll_s=0.05):
            os._exit(0)
    except LockHeld:
        os._exit(3)


def test_the_same_job_restarted_elsewhere_takes_its_lease_over(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    _holder(tmp_path / "lease.json", host="node-before-requeue", pid=123, job="42")
    with run_lease(tmp_path, wait_s=0.1) as me:
        assert me["job"] == "42" and owner_of(tmp_path / "lease.json")["host"] == socket.gethostname()
    assert not (tmp_path / "lease.json").exists()
