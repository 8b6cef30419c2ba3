"""The job entry point: a checkpointable submitit callable that runs one registered job kind.

:class:`JobRunner` is what gets pickled and submitted. In the job it loads the
run's last checkpoint (if it was requeued), calls the job kind, and writes exactly
one result file with :func:`grid.results.write_result` (atomic): ``done`` with the
metrics, or ``failed`` with the tail of the traceback. It never opens the registry.

On a timeout or preemption signal submitit calls :meth:`JobRunner.checkpoint`,
which resubmits the same runner; the job kind's progress lives on disk
(:func:`save_checkpoint` in its working folder), so the requeued job resumes.
"""

from __future__ import annotations

import json
import os
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grid.models import MetricResult, RunResult, RunSpec, TrainStats
from toolscale.files import atomic_write_json

__all__ = ["JobRunner", "save_checkpoint", "load_checkpoint", "read_context", "ERROR_TAIL_CHARS",
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


def _outcome_to_result(run: RunSpec, outcome: Any, job_id: str | None, extra: dict[str, Any]) -> RunResult:
    if isinstance(outcome, RunResult):
        return outcome.model_copy(update={"job_id": outcome.job_id or job_id,
                                          "extra": {**outcome.extra, **extra}})
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
        from grid.results import write_result
        from slurm.jobs import resolve_ref

        run = RunSpec.model_validate(self.run)
        workdir = Path(self.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        job_id = _job_id()
        requeues = self._requeues()
        extra = {"job_kind": self.kind, "requeues": requeues}
        try:
            atomic_write_json(workdir / CONTEXT_FILE, self.context)
            fn = resolve_ref(self.kind_ref)
            outcome = fn(run, workdir, load_checkpoint(workdir))
            result = _outcome_to_result(run, outcome, job_id, extra)
        except Exception:  # every failure of the job kind is recorded, never raised to the scheduler
            tail = traceback.format_exc()[-ERROR_TAIL_CHARS:]
            result = RunResult(run_id=run.run_id, experiment=run.experiment, status="failed", error=tail,
                               job_id=job_id, finished_at=datetime.now(UTC), extra=extra)
        write_result(self.results_dir, result)
        return {"run_id": run.run_id, "status": result.status}

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
