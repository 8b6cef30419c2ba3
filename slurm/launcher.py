"""Launch an experiment's pending runs, preview what a launch would submit, cancel runs.

:func:`slurm.submit.submit_runs` does the submitting (one job array per ladder rung,
the launch manifest written before the registry); this module picks the runs
(``launch``, ``preview``), syncs what a killed launcher left behind first, and
cancels runs (``scancel`` on SLURM, SIGINT for local jobs).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from slurm.errors import LaunchError
from slurm.jobs import job_kind_ref
from slurm.models import CancelReport, ExecutorKind, LaunchReport
from slurm.paths import LaunchPaths
from slurm.process import same_process
from slurm.submit import ACTIVE, LOCAL_JOBS, launch_plan, read_manifests, submit_runs
from toolscale.config import ExperimentConfig

__all__ = ["launch", "preview", "cancel", "distinct_groups_first"]


def launch(config: ExperimentConfig, registry_path: str | Path, *, executor: ExecutorKind | None = None,
           max_parallel: int | None = None, resume: bool = False, job_kind: str = "pipeline",
           folder: str | Path | None = None, run_ids: Sequence[str] | None = None,
           signal_delay_s: int | None = None) -> LaunchReport:
    """Submit the experiment's ``pending`` runs (with ``resume``: every run not done and not active).

    Result files already written and launches a killed launcher left behind are
    synced first (:func:`slurm.sync.sync` without retries), so nothing runs twice.
    The local executor starts at most ``max_parallel`` runs at once, the largest planned
    training FLOPs first; the rest stay
    pending for ``launch --wait`` (or a later ``launch``) to start. :func:`preview` shows
    what this would submit without submitting.
    """
    from grid import Registry
    from slurm.sync import sync

    kind: ExecutorKind = executor or config.executor.kind
    paths = LaunchPaths.of(folder or config.executor.folder)
    parallel = max_parallel or config.executor.max_parallel
    experiment = config.experiment.name
    sync(registry_path, config=config, folder=paths.root, retry=False)
    with Registry(registry_path) as reg:
        reg.experiment(experiment)
        wanted = ["pending", "failed", "cancelled"] if resume else ["pending"]
        runs = reg.runs(experiment, status=wanted, run_ids=run_ids)
        left: list[str] = []
        if kind == "local":
            # longest first (planned training FLOPs): the slots then finish together, not on one long tail
            runs = sorted(runs, key=lambda r: -(r.train_flops or 0.0))
            active = reg.runs(experiment, status=list(ACTIVE))
            runs = distinct_groups_first(runs, active, {a.name for a in config.axes if a.kind == "stage"})
            room = max(0, parallel - len(active))
            runs, left = runs[:room], [r.run_id for r in runs[room:]]
        report = submit_runs(reg, config, runs, executor=kind, paths=paths, job_kind=job_kind,
                             max_parallel=parallel, signal_delay_s=signal_delay_s)
    if kind == "debug" and report.submitted:
        sync(registry_path, config=config, folder=paths.root, retry=False)
    return report.model_copy(update={"left_pending": left})


def _group(run: Any, stage_axes: set[str]) -> tuple:
    """What the arms of one shared-stage group have in common: the recipe without its stage axes, rung, seed,
    tokens (:func:`pipeline.training` shares their SFT and warm start)."""
    recipe = {k: v for k, v in run.recipe.items() if k not in stage_axes}
    return json.dumps(recipe, sort_keys=True), run.model_size, run.seed, run.train_tokens


def distinct_groups_first(runs: Sequence[Any], active: Sequence[Any], stage_axes: set[str]) -> list[Any]:
    """``runs`` reordered, stably, so that no run starts beside a sibling while a run of another group waits.

    Arms that differ only in a stage axis (``stage_axes``) share their SFT model and warm start, and one of
    them trains those while the others wait for it in their slots (:func:`pipeline.reuse.producing`). So the
    first run of each group comes before any second one, and a group with an ``active`` run counts as
    started. Without stage axes the order is unchanged.
    """
    if not stage_axes:
        return list(runs)
    seen = {_group(r, stage_axes) for r in active}
    first, later = [], []
    for r in runs:
        g = _group(r, stage_axes)
        (later if g in seen else first).append(r)
        seen.add(g)
    return first + later


def preview(config: ExperimentConfig, registry_path: str | Path, *, max_parallel: int | None = None,
            resume: bool = False, job_kind: str = "pipeline", run_ids: Sequence[str] | None = None,
            signal_delay_s: int | None = None) -> list[dict[str, Any]]:
    """:func:`launch_plan` of the runs :func:`launch` would submit (read-only; nothing is synced or submitted)."""
    from grid import Registry

    job_kind_ref(job_kind)
    with Registry(registry_path, read_only=True) as reg:
        reg.experiment(config.experiment.name)
        wanted = ["pending", "failed", "cancelled"] if resume else ["pending"]
        runs = reg.runs(config.experiment.name, status=wanted, run_ids=run_ids)
    return launch_plan(config, runs, max_parallel=max_parallel, signal_delay_s=signal_delay_s)


STOP_WAIT_S = 15.0
"""Seconds ``cancel`` waits for local job controllers to exit before it reports one as still running."""
RESIGNAL_S = 3.0
"""Seconds between SIGINTs to a controller that has not exited. A controller exits within about a second
of one (submitit's clean-up waits 1 s before it SIGKILLs its task); a SIGINT that lands while it is still
importing can be swallowed (raised inside an import-lock callback), so it is sent again."""


def _signal_local(job_id: str, started: float | None) -> str | None:
    """SIGINT a local job's controller, only while its PID still belongs to the process started at ``started``."""
    job = LOCAL_JOBS.get(job_id)
    try:
        if job is not None:
            job.cancel()
            return None
        pid = int(job_id)
    except (ProcessLookupError, ValueError):
        return None
    except OSError as err:
        return f"job {job_id}: {err}"
    if started is None:
        return f"job {job_id}: no start time recorded for this PID (launched by an older version); not signalled"
    if not same_process(pid, started):
        return None  # gone, or the PID now belongs to another process: nothing of ours to stop
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return None
    except OSError as err:
        return f"job {job_id}: {err}"
    return None


def _local_alive(job_id: str, started: float | None) -> bool:
    """Whether a signalled local job's controller is still running (this process' job, or the recorded PID)."""
    job = LOCAL_JOBS.get(job_id)
    if job is not None:
        return job.state == "RUNNING"
    try:
        return started is not None and same_process(int(job_id), started)
    except ValueError:
        return False


def _stop_local(jobs: dict[str, float | None], *, wait_s: float = STOP_WAIT_S,
                resignal_s: float = RESIGNAL_S) -> list[str]:
    """SIGINT each local job (``job_id -> start time``), wait until they exit, SIGINT again every
    ``resignal_s``; the problems, one line each (a job still running after ``wait_s`` is one)."""
    errors = [e for e in (_signal_local(j, t) for j, t in jobs.items()) if e]
    live = dict(jobs)
    start = last = time.monotonic()
    while live:
        live = {j: t for j, t in live.items() if _local_alive(j, t)}
        now = time.monotonic()
        if not live or now - start >= wait_s:
            break
        if now - last >= resignal_s:
            errors += [e for e in (_signal_local(j, t) for j, t in live.items()) if e]
            last = now
        time.sleep(0.1)
    return errors + [f"job {j}: still running {wait_s:g} s after SIGINT; cancel again, or kill its PID"
                     for j in live]


def cancel(config: ExperimentConfig | None, registry_path: str | Path, *, experiment: str,
           folder: str | Path | None = None, run_ids: Sequence[str] | None = None,
           pending: bool = False) -> CancelReport:
    """Cancel the live jobs of an experiment (``scancel`` / SIGINT) and record the runs as cancelled.

    With ``pending``, runs not started yet are recorded as cancelled too, so a plain ``launch``
    (or a ``launch --wait`` still topping up) starts nothing more; ``launch --resume`` restarts them.
    """
    from grid import Registry

    paths = LaunchPaths.of(folder or (config.executor.folder if config else "./runs"))
    executor_of: dict[str, str] = {}
    started_of: dict[str, float] = {}
    for m in read_manifests(paths, experiment):
        for job_id in m.jobs.values():
            executor_of[job_id] = m.executor
        started_of.update(m.started)
    with Registry(registry_path) as reg:
        reg.experiment(experiment)
        runs = reg.runs(experiment, status=list(ACTIVE), run_ids=run_ids)
        slurm_ids = [r.job_id for r in runs if r.job_id and executor_of.get(r.job_id) == "slurm"]
        errors: list[str] = [f"job {r.job_id} of run {r.run_id} is in no launch manifest under {paths.root}; "
                             f"not signalled" for r in runs if r.job_id and r.job_id not in executor_of]
        if slurm_ids:
            try:
                proc = subprocess.run(["scancel", *slurm_ids], capture_output=True, text=True, timeout=60)
            except (OSError, subprocess.SubprocessError) as err:
                raise LaunchError(f"scancel failed: {err}") from None
            if proc.returncode != 0:
                errors.extend(line for line in proc.stderr.splitlines() if line.strip())
        errors += _stop_local({r.job_id: started_of.get(r.job_id) for r in runs
                               if r.job_id and executor_of.get(r.job_id) == "local"})
        ids = [r.run_id for r in runs]
        if pending:
            ids += [r.run_id for r in reg.runs(experiment, status=["pending"], run_ids=run_ids)]
        if ids:
            reg.set_status(ids, "cancelled", error="cancelled by toolscale cancel")
    return CancelReport(cancelled=ids, job_ids=[r.job_id for r in runs if r.job_id], errors=errors)
