"""Submit pending runs through submitit (SLURM job arrays, local processes, in-process debug) and cancel them.

One launch = one fresh submitit folder (job ids repeat after a cluster reset, and a
reused folder returns stale results) plus a :class:`slurm.models.LaunchManifest`
written atomically right after the scheduler accepted the jobs and *before* the
registry is updated, so a launcher killed in between loses nothing: the next
:func:`slurm.sync.sync` reads the manifest back.

Runs are grouped by ladder rung (each rung has its own resources) and each group is
submitted in one ``executor.batch()``: one ``sbatch --array`` per rung on SLURM.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from grid.models import RunRecord, RunSpec
from slurm.errors import LaunchError, SubmitError
from slurm.jobs import job_kind_ref
from slurm.models import CancelReport, ExecutorKind, LaunchManifest, LaunchReport
from slurm.paths import LaunchPaths, atomic_write_json
from slurm.resources import executor_parameters
from toolscale.config import ExperimentConfig

__all__ = ["launch", "preview", "launch_plan", "submit_runs", "cancel", "read_manifests", "ACTIVE", "LOCAL_JOBS",
           "MAX_REQUEUES"]

ACTIVE = ("submitted", "running")
"""Run states that have a live job."""

MAX_REQUEUES = 5
"""Time-limit requeues submitit allows one submission (then the run fails: "timed-out too many times").

Preemptions do not count. A run needs ``MAX_REQUEUES + 1`` time limits of work at most; its
dataset stage is not resumable, so it must fit in one time limit."""

LOCAL_JOBS: dict[str, Any] = {}
"""Local jobs submitted by this process (job id -> submitit LocalJob), polled without zombies."""


def _new_launch_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def read_manifests(paths: LaunchPaths, experiment: str | None = None) -> list[LaunchManifest]:
    """Every readable launch manifest under the root, oldest first."""
    out = []
    if not paths.launches.exists():
        return out
    for path in sorted(paths.launches.glob("*/launch.json")):
        try:
            m = LaunchManifest.model_validate_json(path.read_bytes())
        except ValueError:
            continue
        if experiment is None or m.experiment == experiment:
            out.append(m)
    return sorted(out, key=lambda m: m.created_at)


def _spec_of(r: RunRecord) -> RunSpec:
    return RunSpec(run_id=r.run_id, experiment=r.experiment, design_version=r.design_version, recipe=r.recipe,
                   model_size=r.model_size, model_params=r.model_params, train_tokens=r.train_tokens,
                   train_flops=r.train_flops, seed=r.seed, split=r.split, metadata=r.metadata)


_SBATCH_ERR = re.compile(r"sbatch: error: (.*)")


def _submit_error(err: BaseException, size: str) -> SubmitError:
    text = str(err)
    found = _SBATCH_ERR.findall(text)
    detail = "; ".join(dict.fromkeys(f.strip() for f in found)) if found else \
        (text.strip().splitlines() or [type(err).__name__])[-1]
    return SubmitError(f"the scheduler refused the runs of model size {size!r}: {detail} "
                       f"(check executor.slurm and the ladder's cpus/mem_gb/gpus/timeout_min)")


def _archive_old_result(paths: LaunchPaths, run: RunRecord) -> None:
    old = paths.result(run.run_id)
    if old.exists():
        paths.attempts.mkdir(parents=True, exist_ok=True)
        os.replace(old, paths.attempts / f"{run.run_id}.{run.attempts}.result.json")


def submit_runs(reg, config: ExperimentConfig, runs: Sequence[RunRecord], *, executor: ExecutorKind,
                paths: LaunchPaths, job_kind: str = "pipeline", max_parallel: int | None = None,
                signal_delay_s: int | None = None) -> LaunchReport:
    """Submit ``runs`` (one array per ladder rung), write the manifest, mark them submitted.

    Earlier result files of these runs move to ``attempts/`` first (they were ingested).
    On a refused submission the runs of the refused group stay as they were, the ones
    already accepted are recorded, and :class:`SubmitError` carries sbatch's message.
    """
    import submitit

    experiment = config.experiment.name
    if not runs:
        return LaunchReport(launch_id=None, experiment=experiment, executor=executor)
    if executor == "slurm" and (shutil.which("sbatch") is None or shutil.which("srun") is None):
        raise SubmitError("--executor slurm needs sbatch and srun on PATH (not found); use --executor local, "
                          "or try SLURM on this machine with `slurm/dev-cluster.sh up`")
    ref = job_kind_ref(job_kind)
    plan = launch_plan(config, runs, max_parallel=max_parallel, signal_delay_s=signal_delay_s)
    by_id = {r.run_id: r for r in runs}
    launch_id = _new_launch_id()
    folder = paths.submitit_folder(launch_id)
    folder.mkdir(parents=True, exist_ok=True)
    context = {"config": config.model_dump(mode="json"), "dataset_cache": str(paths.datasets),
               "root": str(paths.root)}
    job_ids: dict[str, str] = {}
    submitted_jobs: list[Any] = []
    arrays = 0
    failure: SubmitError | None = None
    t0 = time.perf_counter()
    for step in plan:
        size_name, params = step["model_size"], step["parameters"]
        group = [by_id[i] for i in step["runs"]]
        try:
            ex = submitit.AutoExecutor(folder=folder, cluster=executor, slurm_max_num_timeout=MAX_REQUEUES,
                                       local_max_num_timeout=MAX_REQUEUES)
            ex.update_parameters(**params)
        except (ValueError, NameError, AssertionError, RuntimeError) as err:
            failure = SubmitError(f"invalid submission parameters for model size {size_name!r}: "
                                  f"{str(err).splitlines()[0]}")
            break
        for r in group:
            _archive_old_result(paths, r)
        runners = [_runner(job_kind, ref, r, paths, context) for r in group]
        try:
            with ex.batch():
                jobs = [ex.submit(fn) for fn in runners]
        except Exception as err:  # sbatch refused: submitit raises its own error types with sbatch's stderr
            failure = _submit_error(err, size_name)
            break
        arrays += 1
        for r, job in zip(group, jobs):
            job_ids[r.run_id] = str(job.job_id)
            submitted_jobs.append(job)
            if executor == "local":
                LOCAL_JOBS[str(job.job_id)] = job
    submit_s = time.perf_counter() - t0
    if job_ids:
        manifest = LaunchManifest(launch_id=launch_id, experiment=experiment, executor=executor,
                                  job_kind=job_kind, submitit_folder=str(folder), created_at=datetime.now(UTC),
                                  jobs=job_ids)
        atomic_write_json(paths.manifest(launch_id), manifest.model_dump(mode="json"))
        reg.mark_submitted(job_ids)
    if executor == "debug":
        for job in submitted_jobs:  # in-process, one after the other; the runner records failures itself
            job.results()
    if failure is not None:
        raise failure
    return LaunchReport(launch_id=launch_id if job_ids else None, experiment=experiment, executor=executor,
                        submitted=list(job_ids), job_ids=job_ids, arrays=arrays, submit_s=submit_s)


def launch_plan(config: ExperimentConfig, runs: Sequence[RunRecord], *, max_parallel: int | None = None,
                signal_delay_s: int | None = None) -> list[dict[str, Any]]:
    """What :func:`submit_runs` would submit: per ladder rung, the run ids and the executor parameters (pure)."""
    sizes = {s.name: s for s in config.ladder}
    groups: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        if r.model_size not in sizes:
            raise LaunchError(f"run {r.run_id} has model size {r.model_size!r}, not in the config's ladder "
                              f"({', '.join(sizes)})")
        groups[r.model_size].append(r.run_id)
    parallel = max_parallel or config.executor.max_parallel
    return [{"model_size": name, "runs": ids,
             "parameters": executor_parameters(sizes[name], config.executor.slurm, max_parallel=parallel,
                                               job_name=f"ts-{config.experiment.name}-{name}"[:60],
                                               **({"signal_delay_s": signal_delay_s} if signal_delay_s else {}))}
            for name, ids in groups.items()]


def _runner(kind: str, ref: str, r: RunRecord, paths: LaunchPaths, context: dict[str, Any]):
    from slurm.job import JobRunner

    return JobRunner(kind, ref, _spec_of(r).model_dump(mode="json"), str(paths.workdir(r.run_id)),
                     str(paths.results), context)


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
    from grid.registry import Registry
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
            active = len(reg.runs(experiment, status=list(ACTIVE)))
            room = max(0, parallel - active)
            runs, left = runs[:room], [r.run_id for r in runs[room:]]
        report = submit_runs(reg, config, runs, executor=kind, paths=paths, job_kind=job_kind,
                             max_parallel=parallel, signal_delay_s=signal_delay_s)
    if kind == "debug" and report.submitted:
        sync(registry_path, config=config, folder=paths.root, retry=False)
    return report.model_copy(update={"left_pending": left})


def preview(config: ExperimentConfig, registry_path: str | Path, *, max_parallel: int | None = None,
            resume: bool = False, job_kind: str = "pipeline", run_ids: Sequence[str] | None = None,
            signal_delay_s: int | None = None) -> list[dict[str, Any]]:
    """:func:`launch_plan` of the runs :func:`launch` would submit (read-only; nothing is synced or submitted)."""
    from grid.registry import Registry

    job_kind_ref(job_kind)
    with Registry(registry_path, read_only=True) as reg:
        reg.experiment(config.experiment.name)
        wanted = ["pending", "failed", "cancelled"] if resume else ["pending"]
        runs = reg.runs(config.experiment.name, status=wanted, run_ids=run_ids)
    return launch_plan(config, runs, max_parallel=max_parallel, signal_delay_s=signal_delay_s)


def _signal_local(job_id: str) -> str | None:
    job = LOCAL_JOBS.get(job_id)
    try:
        if job is not None:
            job.cancel()
        else:
            os.kill(int(job_id), signal.SIGINT)
    except (ProcessLookupError, ValueError):
        return None
    except OSError as err:
        return f"job {job_id}: {err}"
    return None


def cancel(config: ExperimentConfig | None, registry_path: str | Path, *, experiment: str,
           folder: str | Path | None = None, run_ids: Sequence[str] | None = None,
           pending: bool = False) -> CancelReport:
    """Cancel the live jobs of an experiment (``scancel`` / SIGINT) and record the runs as cancelled.

    With ``pending``, runs not started yet are recorded as cancelled too, so a plain ``launch``
    (or a ``launch --wait`` still topping up) starts nothing more; ``launch --resume`` restarts them.
    """
    from grid.registry import Registry

    paths = LaunchPaths.of(folder or (config.executor.folder if config else "./runs"))
    executor_of: dict[str, str] = {}
    for m in read_manifests(paths, experiment):
        for job_id in m.jobs.values():
            executor_of[job_id] = m.executor
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
        for r in runs:
            if r.job_id and executor_of.get(r.job_id) == "local":
                problem = _signal_local(r.job_id)
                if problem:
                    errors.append(problem)
        ids = [r.run_id for r in runs]
        if pending:
            ids += [r.run_id for r in reg.runs(experiment, status=["pending"], run_ids=run_ids)]
        if ids:
            reg.set_status(ids, "cancelled", error="cancelled by toolscale cancel")
    return CancelReport(cancelled=ids, job_ids=[r.job_id for r in runs if r.job_id], errors=errors)
