"""The warm local executor's fork server: one process that imports the heavy stack once and forks a job per request.

Run as ``python -m slurm.forkserver MODULE [MODULE ...]`` by :class:`slurm.warm.WarmPool`. It imports the
modules given (``"module"`` or ``"module:attr"``, e.g. ``torch``, ``trl:SFTTrainer``; ``"call:module:attr"``
also calls it, a warm-up such as building the benchmark items; one that fails is reported, never fatal: the
job that needs it fails with its own traceback), answers one JSON
line ``{"ready": ..., "preloaded": [...], "failed": {...}, "threads": N}`` and then serves requests, one
JSON line each on stdin::

    {"runner": {kind, kind_ref, run, workdir, results_dir, context}, "log_dir": DIR, "timeout_s": S,
     "env": {...}, "cwd": DIR, "gpus": 0}

(or ``"call": {"ref": "module:attr", "args": [...], "out": FILE}`` instead of ``"runner"``: the job calls the
function and writes ``{"result": ...}`` or ``{"error": ...}`` to ``FILE``, see :func:`slurm.warm.map_warm`)

with one line ``{"pid": PID, "started": T}`` (the job's process and its start time, seconds since the
epoch) or ``{"error": "..."}``. EOF on stdin ends the server; jobs already forked run on.

Each job is a fresh ``fork()`` of the server, which never runs a job itself, so a job starts from the
same clean state every time (isolation: a crash, leaked memory or stray module state of one job ends
with its process). The preloaded objects are frozen out of the garbage collector (``gc.freeze``), so a
job's collections (accelerate runs a full one as training starts) neither scan nor copy those pages.
In the job, before :class:`slurm.job.JobRunner` runs:

* stdout and stderr go to ``LOG_DIR/<pid>_0_log.out`` and ``.err`` (submitit's names, so
  :func:`slurm.sync.log_tail` reads them); stdin is ``/dev/null``;
* the environment and working folder are the launcher's at submission (a fresh process would see those);
  the ``SUBMITIT_*`` variables of a local submitit task are set, so ``submitit.JobEnvironment()`` works,
  and ``CUDA_VISIBLE_DEVICES`` lists ``gpus`` devices (empty for CPU jobs), as submitit's local executor does;
* Python's and numpy's global random generators are reseeded from the OS (a fork would share them);
* SIGINT raises ``KeyboardInterrupt`` (``toolscale cancel``; no result is written), a second one exits at once;
* after ``timeout_s`` seconds a :class:`JobTimeout` is raised in the job (the runner records the run as
  failed, ``sync`` retries it while attempts are left, and the job kind resumes from its checkpoint);
  60 s later the process exits with code 124 if it has not.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, TextIO

__all__ = ["JobTimeout", "preload", "serve", "TIMEOUT_GRACE_S"]

TIMEOUT_GRACE_S = 60.0
"""Seconds a job may run on after its :class:`JobTimeout` before its process is ended (exit code 124)."""


class JobTimeout(Exception):
    """Raised inside a warm job that ran past its rung's ``timeout_min``."""


def preload(modules: list[str]) -> tuple[list[str], dict[str, str]]:
    """Import ``modules`` (``"module"`` or ``"module:attr"``; ``"call:module:attr"`` also calls it, with no
    arguments: a warm-up whose results the jobs inherit); returns (done, {name: one-line error})."""
    done: list[str] = []
    failed: dict[str, str] = {}
    for name in modules:
        call = name.startswith("call:")
        module, _, attr = name.removeprefix("call:").partition(":")
        try:
            obj: Any = importlib.import_module(module)
            for part in filter(None, attr.split(".")):
                obj = getattr(obj, part)
            if call:
                obj()
            done.append(name)
        except Exception as err:  # noqa: BLE001 - a missing package fails the job that needs it, not the server
            failed[name] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    return done, failed


def _threads() -> int:
    """Threads of this process (a fork copies only the calling one, so the server should have one)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _reap(*_: Any) -> None:
    """Collect every ended child (SIGCHLD handler of the server; jobs reset it)."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _on_sigint(signum: int, frame: Any) -> None:
    """First SIGINT: ``KeyboardInterrupt`` in the job (clean-up runs); any later one: exit now."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(130))
    raise KeyboardInterrupt


def _on_timeout(limit_s: float) -> Any:
    def handler(signum: int, frame: Any) -> None:
        timer = threading.Timer(TIMEOUT_GRACE_S, os._exit, args=(124,))
        timer.daemon = True
        timer.start()
        raise JobTimeout(f"the job ran past its time limit of {limit_s / 60:g} min (the ladder rung's "
                         f"timeout_min); a retry resumes from its checkpoint")
    return handler


def _redirect(log_dir: str, pid: int) -> None:
    """Point fds 0-2 at /dev/null and the job's two log files (appended)."""
    os.makedirs(log_dir, exist_ok=True)
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(os.path.join(log_dir, f"{pid}_0_log.out"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    err = os.open(os.path.join(log_dir, f"{pid}_0_log.err"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)


def _job_env(request: dict[str, Any], pid: int) -> dict[str, str]:
    gpus = int(request.get("gpus") or 0)
    return {**request["env"], "SUBMITIT_EXECUTOR": "local", "SUBMITIT_LOCAL_JOB_ID": str(pid),
            "SUBMITIT_LOCAL_NODEID": "0", "SUBMITIT_LOCAL_LOCALID": "0", "SUBMITIT_LOCAL_GLOBALID": "0",
            "SUBMITIT_LOCAL_NTASKS": "1", "SUBMITIT_LOCAL_JOB_NUM_NODES": "1",
            "CUDA_VISIBLE_DEVICES": ",".join(str(k) for k in range(gpus))}


def _reseed() -> None:
    import random

    random.seed()
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed()


def _run_job(request: dict[str, Any], reply_fd: int) -> int:
    """The forked job: set up the process (module docstring), run the runner; returns the exit code."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.close(reply_fd)
    pid = os.getpid()
    _redirect(request["log_dir"], pid)
    os.environ.clear()
    os.environ.update(_job_env(request, pid))
    os.chdir(request["cwd"])
    _reseed()
    what = f"run {request['runner']['run'].get('run_id')}" if "runner" in request else f"call {request['call']['ref']}"
    print(f"toolscale warm job {pid}: {what} (forked {time.time() - request['sent']:.3f} s after submission)",
          file=sys.stderr, flush=True)
    limit = request.get("timeout_s")
    if limit:
        signal.signal(signal.SIGALRM, _on_timeout(float(limit)))
        signal.setitimer(signal.ITIMER_REAL, float(limit))
    if "runner" in request:
        from slurm.job import JobRunner

        JobRunner(**request["runner"])()
    else:
        _call(request["call"])
    signal.setitimer(signal.ITIMER_REAL, 0)
    return 0


def _call(spec: dict[str, Any]) -> None:
    """A ``call`` request: ``ref(*args)`` (a ``"module:attr"``), its JSON result written atomically to ``out``
    as ``{"result": ...}``, or ``{"error": traceback tail}`` when it raises."""
    from slurm.jobs import resolve_ref
    from toolscale.files import atomic_write_json

    try:
        payload: dict[str, Any] = {"result": resolve_ref(spec["ref"])(*spec.get("args", []))}
    except Exception:  # noqa: BLE001 - the caller gets the failure as data
        payload = {"error": traceback.format_exc()[-4000:]}
    atomic_write_json(Path(spec["out"]), payload)


def _fork(request: dict[str, Any], reply_fd: int) -> dict[str, Any]:
    """Fork one job; the parent gets ``{"pid", "started"}`` (SIGCHLD held, so the child cannot be reaped first)."""
    import psutil

    sys.stdout.flush()
    sys.stderr.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        pid = os.fork()
        if pid == 0:  # the job: never returns into the server's loop
            code = 1
            try:
                code = _run_job(request, reply_fd)
            except BaseException:  # noqa: BLE001 - KeyboardInterrupt (cancel) and crashes of the set-up
                traceback.print_exc()
                code = 130 if isinstance(sys.exc_info()[1], KeyboardInterrupt) else 1
            finally:
                _exit(code)
        started = psutil.Process(pid).create_time()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
    return {"pid": pid, "started": started}


def _exit(code: int) -> None:
    """End a job process: its atexit handlers, flushed output, then ``os._exit`` (never the server's stack)."""
    try:
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve(modules: list[str], requests: TextIO, reply_fd: int) -> int:
    """Preload ``modules``, announce readiness on ``reply_fd``, then fork one job per request line until EOF."""
    t0 = time.perf_counter()
    done, failed = preload(modules)
    gc.collect()
    gc.freeze()  # the preloaded objects leave the collector: a job's collections neither scan nor copy them
    reply = os.fdopen(reply_fd, "w", buffering=1, closefd=False)
    reply.write(json.dumps({"ready": True, "preloaded": done, "failed": failed, "threads": _threads(),
                            "preload_s": round(time.perf_counter() - t0, 3), "pid": os.getpid()}) + "\n")
    signal.signal(signal.SIGCHLD, _reap)
    for line in requests:
        if not line.strip():
            continue
        try:
            answer = _fork(json.loads(line), reply_fd)
        except Exception as err:  # noqa: BLE001 - a bad request or a failed fork is answered, the server lives
            answer = {"error": f"{type(err).__name__}: {err}"}
        reply.write(json.dumps(answer) + "\n")
    return 0


def main(argv: list[str]) -> int:
    """Entry point: replies go to the original stdout; the server's own prints go to stderr."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    return serve(argv, sys.stdin, reply_fd)


if __name__ == "__main__":  # pragma: no cover - run by slurm.warm as a subprocess
    sys.exit(main(sys.argv[1:]))
