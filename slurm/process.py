"""Process identity for local jobs: a PID counts only together with the start time recorded for it.

A local submitit job is known by its controller's PID. PIDs are reused: after the job ends, the same number
can belong to an unrelated process, which a bare-PID check would call alive and ``cancel`` would SIGINT.
:func:`process_start` reads a process's start time (``psutil``: ``/proc/PID/stat`` on Linux, seconds since
the epoch); the launcher records it beside the PID, and :func:`same_process` accepts a PID only while its
start time still matches.
"""

from __future__ import annotations

import psutil

__all__ = ["process_start", "same_process", "START_TOLERANCE_S"]

START_TOLERANCE_S = 0.001
"""Start times compare equal within this many seconds: the kernel counts in clock ticks (10 ms), so one process
always reads the same time and a later one differs by a tick or more."""


def process_start(pid: int) -> float | None:
    """Start time of process ``pid`` (seconds since the epoch), or None when there is no such process."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, OverflowError):
        return None


def same_process(pid: int, started: float) -> bool:
    """True when ``pid`` is alive, not a zombie, and started at ``started`` (the recorded start time)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(proc.create_time() - started) <= START_TOLERANCE_S
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, OverflowError):
        return False
