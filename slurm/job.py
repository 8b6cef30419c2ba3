"""The job entry point: a checkpointable submitit callable that runs one registered job kind.

:class:`JobRunner` is what gets pickled and submitted. In the job it loads the
run's last checkpoint (if it was requeued), calls the job kind, and writes exactly
one result file with :func:`grid.results.write_result` (atomic): ``done`` with the
metrics, or ``failed`` with the tail of the traceback. It never opens the registry.

Signals (:mod:`slurm.preemption`): ``SIGUSR2`` before the time limit and ``SIGTERM`` at preemption
or ``scontrol requeue`` make training save a checkpoint at its current step; then ``SIGUSR2``
requeues through submitit (:meth:`JobRunner.checkpoint` resubmits the same runner) and ``SIGTERM``
exits without a result, for SLURM to requeue. The job kind's progress lives on disk
(:func:`save_checkpoint` in its working folder), so the requeued job resumes.

A job step of several tasks (one per GPU) runs the runner in every task: each exports torch
distributed's variables, and only global rank 0 takes the run's lease (:func:`slurm.locks.run_lease`,
so no two jobs train one run folder), records the attempt's GPU time and writes the result.
Failures carry a class (:func:`slurm.preemption.classify`) that decides whether ``sync`` retries them.
"""

from __future__ import annotations

import json
import os
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grid.models import MetricResult, RunOutcome, RunResult, RunSpec, TrainStats
from toolscale.files import atomic_write_json

__all__ = ["JobRunner", "export_distributed", "save_checkpoint", "load_checkpoint", "read_context", "ERROR_TAIL_CHARS",
           "CHECKPOINT_FILE", "CONTEXT_FILE", "REQUEUE_FILE"]

ERROR_TAIL_CHARS = 4000
"""Characters of a failure's traceback kept in the result file (its tail)."""
CHECKPOINT_FILE = "checkpoint.json"
CONTEXT_FILE = "context.json"
REQUEUE_FILE = "requeues.log"


def save_checkpoint(workdir: str | Path, state: dict[str, Any]) -> None:
    """Save a job kind's resumable state (JSON-able dict) atomically in its working folder."""
    atomic_write_json(Path(workdir) / CHECKPOINT_FILE, state)


def load_checkpoint(workdir: str | Path) -> dict[str, Any] | None:
    """The last saved state, or None (fresh start, or an unreadable file)."""
    path = Path(workdir) / CHECKPOINT_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_context(workdir: str | Path) -> dict[str, Any]:
    """The launch context the runner wrote for the job kind (config, dataset cache folder)."""
    return json.loads((Path(workdir) / CONTEXT_FILE).read_text(encoding="utf-8"))


def _job_id() -> str | None:
    try:
        import submitit

        env = submitit.JobEnvironment()
        return str(env.job_id)
    except Exception:  # not inside a submitit job (direct call)
        return os.environ.get("SLURM_JOB_ID")


def export_distributed() -> int:
    """In a SLURM step of several tasks, export MASTER_ADDR/PORT, RANK, WORLD_SIZE, LOCAL_RANK (submitit's
    ``TorchDistributedEnvironment``; every task keeps all the node's GPUs visible, the Trainer takes
    ``cuda:LOCAL_RANK``). Returns this task's global rank (0 for a single task)."""
    if int(os.environ.get("SLURM_NTASKS", "1") or 1) > 1 and "RANK" not in os.environ:
        from submitit.helpers import TorchDistributedEnvironment

        TorchDistributedEnvironment().export(set_cuda_visible_devices=False)
    return int(os.environ.get("RANK", "0") or 0)


def _outcome_to_result(run: RunSpec, outcome: RunOutcome | RunResult | dict[str, Any] | None, job_id: str | None,
                       extra: dict[str, Any]) -> RunResult:
    """The ``done`` result of a job kind's return value (:mod:`slurm.jobs`), the runner's ``extra`` added."""
    if isinstance(outcome, RunResult):
        return outcome.model_copy(update={"job_id": outcome.job_id or job_id,
                                          "extra": {**outcome.extra, **extra}})
    if isinstance(outcome, RunOutcome):
        return RunResult(run_id=run.run_id, experiment=run.experiment, status="done", metrics=outcome.metrics,
                         train=outcome.train, dataset_id=outcome.dataset_id, job_id=job_id,
                         finished_at=datetime.now(UTC), extra={**outcome.result_extra(), **extra})
    outcome = dict(outcome or {})
    metrics = [m if isinstance(m, MetricResult) else MetricResult.model_validate(m)
               for m in outcome.get("metrics", [])]
    train = outcome.get("train")
    if train is not None and not isinstance(train, TrainStats):
        train = TrainStats.model_validate(train)
    return RunResult(run_id=run.run_id, experiment=run.experiment, status="done", metrics=metrics, train=train,
                     dataset_id=outcome.get("dataset_id"), job_id=job_id, finished_at=datetime.now(UTC),
                     extra={**dict(outcome.get("extra") or {}), **extra})


class JobRunner:
    """Runs job kind ``kind_ref`` on ``run`` and writes its result file.

    Parameters
    ----------
    kind : registered job kind name (recorded in the result).
    kind_ref : ``"module:attr"`` or ``"/file.py:attr"`` (see :func:`slurm.jobs.job_kind_ref`).
    run : the run spec, as a JSON dict (``RunSpec.model_dump(mode="json")``).
    workdir : the run's working folder.
    results_dir : where the result file goes.
    context : JSON-able launch context written to ``workdir/context.json`` for the job kind.
    """

    def __init__(self, kind: str, kind_ref: str, run: dict[str, Any], workdir: str, results_dir: str,
                 context: dict[str, Any] | None = None):
        self.kind = kind
        self.kind_ref = kind_ref
        self.run = run
        self.workdir = workdir
        self.results_dir = results_dir
        self.context = context or {}

    def __call__(self) -> dict[str, str]:
        from slurm.gpu_time import attempt_start, record_attempt
        from slurm.preemption import StopHandlers

        run = RunSpec.model_validate(self.run)
        workdir = Path(self.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        rank = export_distributed()
        job_id = _job_id()
        started = attempt_start()
        stop = StopHandlers(grace_s=float(self.context.get("signal_grace_s", 240.0)))
        outcome = "stopped"
        try:
            with stop:
                result = self._run(run, workdir, job_id, rank, stop)
            outcome = result.status
        finally:  # a requeue or SIGTERM exits through here too: the attempt's GPU time is kept
            if rank == 0:
                record_attempt(workdir, started=started, outcome=outcome, job_id=job_id)
        if rank == 0:
            from grid import write_result
            from slurm.gpu_time import read_attempts

            attempts = read_attempts(workdir)
            result = result.model_copy(update={"extra": {
                **result.extra, "gpu_seconds": round(sum(a.get("gpu_s", 0.0) for a in attempts), 3),
                "attempts_in_job": len(attempts)}})
            write_result(self.results_dir, result)
        return {"run_id": run.run_id, "status": result.status}

    def _run(self, run: RunSpec, workdir: Path, job_id: str | None, rank: int, stop: Any) -> RunResult:
        """The job kind under the run's lease (rank 0), its failures classified; a stop finishes the signal."""
        from contextlib import nullcontext

        from slurm.jobs import resolve_ref
        from slurm.locks import run_lease
        from slurm.preemption import classify

        from slurm.gpu_time import read_attempts

        earlier = sum(1 for a in read_attempts(workdir) if job_id and a.get("job") == job_id)
        extra: dict[str, Any] = {"job_kind": self.kind, "requeues": max(self._requeues(), earlier)}
        try:
            if rank == 0:
                atomic_write_json(workdir / CONTEXT_FILE, self.context)
            fn = resolve_ref(self.kind_ref)
            with run_lease(workdir, wait_s=float(self.context.get("lease_wait_s", 600.0))) if rank == 0 \
                    else nullcontext():
                outcome = fn(run, workdir, load_checkpoint(workdir))
            return _outcome_to_result(run, outcome, job_id, extra)
        except Exception as err:  # every failure of the job kind is recorded, never raised to the scheduler
            if stop.received is not None:  # it stopped on a signal (after saving): requeue (USR2) or exit (TERM)
                stop.finish()
            tail = traceback.format_exc()[-ERROR_TAIL_CHARS:]
            extra["failure_class"] = "preempted" if type(err).__name__ in ("Stopped", "Interrupted") \
                else classify(tail)
        return RunResult(run_id=run.run_id, experiment=run.experiment, status="failed", error=tail,
                         job_id=job_id, finished_at=datetime.now(UTC), extra=extra)

    def _requeues(self) -> int:
        try:
            return len((Path(self.workdir) / REQUEUE_FILE).read_text(encoding="utf-8").splitlines())
        except OSError:
            return 0

    def checkpoint(self, *args: Any, **kwargs: Any) -> Any:
        """Called by submitit on timeout or preemption: note the requeue, resubmit this same runner."""
        import submitit

        path = Path(self.workdir) / REQUEUE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(f"{datetime.now(UTC).isoformat()} job {_job_id()}\n")
        return submitit.helpers.DelayedSubmission(self, *args, **kwargs)
