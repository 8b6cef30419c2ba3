"""Lock files for shared file systems: ``O_CREAT | O_EXCL`` plus a heartbeat, no ``flock``.

``fcntl.flock`` fails with ``ENOSYS`` on Lustre's default mount (``noflock``), and under ``localflock`` or
NFSv3 ``nolock`` it only excludes processes of one node. Exclusive creation of a file is atomic on NFSv3+,
NFSv4 and Lustre, so :func:`exclusive` takes a lock by creating ``path`` with ``O_EXCL`` and writing its owner
(host, pid, job id, a heartbeat counter) into it. While held, a daemon thread rewrites the file every ``beat_s``
seconds with the counter increased (temp file + rename, so the file never disappears).

A lock is **stale**, and is broken by renaming it aside, when

* its owner ran on this host and that process is gone (a killed job, seen at once), or
* its owner is the same SLURM job (a requeued job restarting; its old processes are dead), or
* its heartbeat has not changed for ``stale_s`` seconds of the waiter's own clock (no clock comparison
  between nodes is needed).

Users: the shared dataset cache (:func:`pipeline.job.ensure_dataset`) and the per-run lease
(:func:`run_lease`) that keeps two jobs from training the same run folder at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slurm.errors import LaunchError

__all__ = ["exclusive", "run_lease", "LockHeld", "owner_of", "LEASE_FILE", "BEAT_S", "STALE_S"]

LEASE_FILE = "lease.json"
"""The per-run lease in a run's working folder."""
BEAT_S = 20.0
"""Seconds between heartbeats of a held lock."""
STALE_S = 120.0
"""Seconds without a heartbeat after which a lock counts as abandoned."""


class LockHeld(LaunchError):
    """A lock (a run's lease) is held by another live job; the message names the holder."""


def _me() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "job": os.environ.get("SLURM_JOB_ID"),
            "rank": os.environ.get("RANK") or os.environ.get("SLURM_PROCID")}


def owner_of(path: str | Path) -> dict[str, Any] | None:
    """The owner record of a lock file, or None when there is none (or it is being replaced)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _pid_dead(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, TypeError, OverflowError):
        return False
    return False


def _dead_at_once(holder: dict[str, Any], me: dict[str, Any]) -> bool:
    """Whether the holder is certainly gone without waiting for its heartbeat."""
    same_host = holder.get("host") == me["host"]
    if holder.get("job") and holder.get("job") == me["job"]:
        return not same_host or _pid_dead(holder.get("pid"))  # this job, restarted
    return same_host and _pid_dead(holder.get("pid"))


def _write(path: Path, record: dict[str, Any]) -> None:
    from toolscale.files import atomic_write_text

    atomic_write_text(path, json.dumps(record))  # the file never disappears while held


def _try_create(path: Path, record: dict[str, Any]) -> bool:
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(record))
        f.flush()
        os.fsync(f.fileno())
    return True


def _break(path: Path, seen: dict[str, Any] | None) -> None:
    """Rename a stale lock aside (only if it still holds what was judged stale)."""
    if owner_of(path) != seen:
        return
    with contextlib.suppress(FileNotFoundError):
        os.rename(path, path.with_name(f".{path.name}.stale-{uuid.uuid4().hex[:8]}"))


@contextlib.contextmanager
def exclusive(path: str | Path, *, wait_s: float | None = None, poll_s: float = 0.2, stale_s: float = STALE_S,
              beat_s: float = BEAT_S, what: str = "lock") -> Iterator[dict[str, Any]]:
    """Hold the lock file ``path`` for the block (see the module docstring); yields the owner record.

    Waits for a live holder up to ``wait_s`` seconds (None: forever), then raises :class:`LockHeld`
    naming ``what`` and the holder. The file is removed on exit, if it is still this owner's.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    me = {**_me(), "token": uuid.uuid4().hex, "beat": 0, "since": time.time()}
    start = time.monotonic()
    seen, seen_at = None, start
    while not _try_create(path, me):
        holder = owner_of(path)
        now = time.monotonic()
        if holder != seen:
            seen, seen_at = holder, now
        if holder is not None and (_dead_at_once(holder, me) or now - seen_at >= stale_s):
            _break(path, holder)
            continue
        if wait_s is not None and now - start >= wait_s:
            who = f"job {holder.get('job')} on {holder.get('host')} (pid {holder.get('pid')})" if holder else "?"
            raise LockHeld(f"{what} {path} is held by {who} for {time.time() - (holder or {}).get('since', 0):.0f} s; "
                           f"waited {wait_s:g} s")
        time.sleep(poll_s)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(beat_s):
            if (owner_of(path) or {}).get("token") != me["token"]:
                return  # broken by someone who judged it stale: do not write over theirs
            me["beat"] += 1
            with contextlib.suppress(OSError):
                _write(path, me)

    thread = threading.Thread(target=beat, name=f"heartbeat {path.name}", daemon=True)
    thread.start()
    try:
        yield me
    finally:
        stop.set()
        thread.join(timeout=5)
        if (owner_of(path) or {}).get("token") == me["token"]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)


def run_lease(workdir: str | Path, *, wait_s: float = 600.0, **kwargs: Any) -> contextlib.AbstractContextManager:
    """The per-run lease (``workdir/lease.json``): one job at a time trains a run's folder.

    A retry submitted while the job it replaces is still stopping waits up to ``wait_s`` seconds for it
    (it saves a checkpoint on SIGTERM and lets go), then fails with :class:`LockHeld`."""
    return exclusive(Path(workdir) / LEASE_FILE, wait_s=wait_s, what=f"the lease of run {Path(workdir).name}",
                     **kwargs)
