"""The warm local executor: jobs forked from a process that imported the heavy stack once.

``launch --executor local`` used to start two fresh interpreters per run (submitit's controller and its
task), each job importing torch, transformers and TRL again (about 9 s of a small run on 2 cores). Here
the launcher keeps a :class:`WarmPool`: one fork server per set of preloaded modules
(:mod:`slurm.forkserver`), started on the first local submission of this process and reused by every
later one (``launch --wait``'s top-ups, retries, ``verify``), and ended when the launcher exits (jobs
already running go on). Each run is a fresh ``fork()`` of that server:

* **isolation**: the server never runs a job, so every job starts from the same clean state, and a job's
  crash, memory or module state ends with its own process;
* **the same contract as before**: the job id is the job's PID (its start time goes in the launch
  manifest), its logs are ``<submitit folder>/<pid>_0_log.{out,err}``, SIGINT cancels it, and a job that
  dies without a result file is failed by :func:`slurm.sync.sync` with its log tail and resubmitted
  (on a fresh fork) while the run has attempts left (``executor.max_attempts``, 2 by default: one retry);
* a server that died (killed, out of memory) is replaced at the next submission, which is retried once.

Which modules a job kind preloads: :data:`PRELOAD` (the ``pipeline`` kind: torch, transformers, TRL and the
project's job modules); other kinds preload nothing and still save the second interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from slurm.errors import LaunchError
from slurm.process import same_process

__all__ = ["WarmPool", "WarmJob", "pool_for", "submit_warm", "map_warm", "close_pools", "PRELOAD", "READY_TIMEOUT_S"]

PRELOAD: dict[str, tuple[str, ...]] = {
    "pipeline": ("torch", "numpy", "datasets", "transformers", "transformers:LlamaForCausalLM",
                 "transformers:Trainer", "trl", "trl:SFTTrainer", "trl:SFTConfig", "tokenizers",
                 "submitit", "slurm.job", "slurm.preemption", "pipeline.job", "pipeline.training",
                 "pipeline.lr_scan", "train.sft", "train.data", "train.proxy", "train.tokenizer", "train.tokenized",
                 "eval.runner", "eval.backends", "eval.heldout", "eval.resumable", "eval.checkpoints",
                 "eval.token_cache", "eval.diagnostics", "synth.dataset", "probes.measure",
                 "call:eval.benchmarks:preload_items"),
}
"""What the fork server of a job kind imports before forking (``"module"`` or ``"module:attr"``), and calls
(``"call:module:attr"``: the held-out call benchmarks' items, built once instead of in every run)."""
DEFAULT_PRELOAD: tuple[str, ...] = ("slurm.job",)
"""What kinds without an entry in :data:`PRELOAD` preload."""
READY_TIMEOUT_S = 1800.0
"""Seconds a new fork server may take to import its modules before the submission fails: a safety net for a
hung import only (about 15 s on 2 idle cores; 230 s was measured with 16 processes sharing them)."""
FORK_TIMEOUT_S = 300.0
"""Seconds a fork server may take to answer one fork request (milliseconds when the machine is not starved)."""
_ENV_KEYS = ("PYTHON", "OMP_", "MKL_", "OPENBLAS_", "TORCH", "HF_", "TRANSFORMERS", "TOKENIZERS", "CUDA")
"""Environment variables read at import time: a server started under other values is not reused."""


class WarmJob:
    """A job forked by a :class:`WarmPool` (what ``slurm.submit.LOCAL_JOBS`` holds for this process)."""

    def __init__(self, pid: int, started: float) -> None:
        self.job_id = str(pid)
        self.pid = pid
        self.started = started
        self.cancelled = False

    @property
    def state(self) -> str:
        """``RUNNING`` while the PID is this job's live process; then ``INTERRUPTED`` (cancelled) or ``FINISHED``."""
        if same_process(self.pid, self.started):
            return "RUNNING"
        return "INTERRUPTED" if self.cancelled else "FINISHED"

    def cancel(self) -> None:
        """SIGINT the job (only while its PID is still this job's process)."""
        self.cancelled = True
        if same_process(self.pid, self.started):
            try:
                os.kill(self.pid, signal.SIGINT)
            except ProcessLookupError:
                pass

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for the job to end; True when it did."""
        deadline = time.monotonic() + timeout_s
        while same_process(self.pid, self.started):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True


class WarmPool:
    """One fork server (:mod:`slurm.forkserver`) that has imported ``modules``; :meth:`fork` starts a job."""

    def __init__(self, modules: Sequence[str], *, log_path: Path | None = None,
                 ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self.modules = tuple(modules)
        err = open(log_path, "a", encoding="utf-8") if log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "slurm.forkserver", *self.modules],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                         bufsize=1)
        finally:
            if log_path:
                err.close()
        self._lock = threading.Lock()
        self.info = self._read(ready_timeout_s, "start")
        if not self.info.get("ready"):
            self.close()
            raise LaunchError(f"the warm executor's fork server did not start: {self.info}")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self, timeout_s: float, what: str) -> dict[str, Any]:
        """One reply line, or LaunchError when the server ends or stays silent for ``timeout_s``."""
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout_s)
        if not out or not out[0]:
            code = self.proc.poll()
            self.close()
            state = f"exited (code {code})" if code is not None else "did not answer"
            raise LaunchError(f"the warm executor's fork server {state} during {what}")
        return json.loads(out[0])

    def fork(self, runner: dict[str, Any] | None = None, *, log_dir: Path, timeout_s: float | None, gpus: int = 0,
             call: dict[str, Any] | None = None) -> WarmJob:
        """Fork one job running :class:`slurm.job.JobRunner` with ``runner``'s fields (or a ``call``: see
        :func:`map_warm`); returns its handle."""
        request = {"runner": runner} if runner is not None else {"call": call}
        request.update({"log_dir": str(log_dir), "timeout_s": timeout_s, "gpus": gpus, "env": dict(os.environ),
                        "cwd": os.getcwd(), "sent": time.time()})
        with self._lock:
            try:
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as err:
                self.close()
                raise LaunchError(f"the warm executor's fork server is gone ({err})") from None
            answer = self._read(FORK_TIMEOUT_S, "a fork")
        if "error" in answer:
            raise LaunchError(f"the warm executor could not start a job: {answer['error']}")
        return WarmJob(int(answer["pid"]), float(answer["started"]))

    def close(self) -> None:
        """End the server (EOF on its stdin); jobs it forked run on."""
        try:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


_POOLS: dict[tuple, WarmPool] = {}
_POOLS_LOCK = threading.Lock()


def _key(modules: Sequence[str]) -> tuple:
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_ENV_KEYS)))
    return (sys.executable, tuple(modules), env, os.getcwd())


def pool_for(job_kind: str, *, log_path: Path | None = None) -> WarmPool:
    """This process' live fork server for ``job_kind``'s preload set (a new one if none is alive)."""
    modules = PRELOAD.get(job_kind, DEFAULT_PRELOAD)
    key = _key(modules)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is not None and pool.alive:
            return pool
        if pool is not None:
            pool.close()
        pool = _POOLS[key] = WarmPool(modules, log_path=log_path)
        return pool


def submit_warm(job_kind: str, runners: Sequence[dict[str, Any]], *, log_dir: Path, timeout_min: float,
                gpus: int = 0) -> tuple[list[WarmJob], str | None]:
    """Fork one job per runner (``JobRunner`` fields) from the kind's fork server, in order.

    A dead server is replaced and that job's fork tried once more. Returns the jobs started and, when one
    could not start, why (the runners after it are not started either)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir.parent / "forkserver.log"
    jobs: list[WarmJob] = []
    for runner in runners:
        for attempt in (1, 2):
            try:
                pool = pool_for(job_kind, log_path=log_path)
                jobs.append(pool.fork(runner, log_dir=log_dir, timeout_s=60.0 * timeout_min, gpus=gpus))
                break
            except LaunchError as err:
                if attempt == 2 or _alive(job_kind):
                    return jobs, str(err)
    return jobs, None


def _alive(job_kind: str) -> bool:
    """Whether this process has a live fork server for ``job_kind`` (a failed fork with a live server is
    not retried: the request itself failed)."""
    pool = _POOLS.get(_key(PRELOAD.get(job_kind, DEFAULT_PRELOAD)))
    return pool is not None and pool.alive


def map_warm(ref: str, calls: Sequence[Sequence[Any]], *, slots: int, log_dir: Path, preload_as: str = "pipeline",
             poll_s: float = 0.1) -> Iterator[tuple[int, dict[str, Any]]]:
    """``ref(*args)`` for each ``args`` in ``calls``, each in a fresh fork of the warm server of job kind
    ``preload_as``, at most ``slots`` at a time; yields ``(index, {"result": ...} or {"error": ...})`` as they
    finish (arguments and results are JSON; a call whose process dies yields its log tail as the error)."""
    log_dir.mkdir(parents=True, exist_ok=True)
    todo = list(enumerate(calls))
    live: dict[int, tuple[WarmJob, Path]] = {}
    while todo or live:
        while todo and len(live) < max(1, slots):
            i, args = todo.pop(0)
            out = log_dir / f"call-{os.getpid()}-{i}.json"
            out.unlink(missing_ok=True)
            job = pool_for(preload_as, log_path=log_dir / "forkserver.log").fork(
                log_dir=log_dir, timeout_s=None, call={"ref": ref, "args": list(args), "out": str(out)})
            live[i] = (job, out)
        for i, (job, out) in list(live.items()):
            if job.state == "RUNNING":
                continue
            del live[i]
            try:
                yield i, json.loads(out.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                yield i, {"error": f"the call's process {job.pid} ended without a result\n{_tail(log_dir, job.job_id)}"}
        if live:
            time.sleep(poll_s)


def _tail(log_dir: Path, job_id: str, n: int = 20) -> str:
    """The last ``n`` lines of a job's stderr log (``<job_id>_0_log.err``), or ''."""
    try:
        return "\n".join((log_dir / f"{job_id}_0_log.err").read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


@atexit.register
def close_pools() -> None:
    """End every fork server of this process (their jobs run on)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()
