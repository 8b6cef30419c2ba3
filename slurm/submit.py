"""Submission: put pending runs on an executor (SLURM job arrays, local processes, in-process debug).

One submission = one fresh submitit folder (job ids repeat after a cluster reset, and a
reused folder returns stale results) plus a :class:`slurm.models.LaunchManifest`
written atomically right after the scheduler accepted the jobs and *before* the
registry is updated, so a launcher killed in between loses nothing: the next
:func:`slurm.sync.sync` reads the manifest back.

Runs are grouped by ladder rung (each rung has its own resources) and each group is
submitted in one ``executor.batch()``: one ``sbatch --array`` per rung on SLURM.
Both :mod:`slurm.launcher` (first submissions, cancel) and :mod:`slurm.sync`
(resubmitting failed runs) build on this module.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import secrets
import shutil
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from grid.models import RunRecord, RunSpec
from slurm.errors import LaunchError, SubmitError
from slurm.jobs import job_kind_ref
from slurm.models import ExecutorKind, LaunchManifest, LaunchReport
from slurm.paths import LaunchPaths
from toolscale.files import atomic_write_json
from slurm.process import process_start
from slurm.resources import executor_parameters
from toolscale.config import ExperimentConfig

__all__ = ["submit_runs", "launch_plan", "read_manifests", "ACTIVE", "LOCAL_JOBS", "MAX_REQUEUES"]

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


@contextlib.contextmanager
def interruptible_children(local: bool) -> Iterator[None]:
    """Local job controllers must stay cancellable by SIGINT (``toolscale cancel``).

    A process started in the background by a non-interactive shell (``nohup toolscale launch ... &``)
    inherits SIGINT as *ignored*, and so would every controller it spawns: ``cancel`` would then signal
    jobs that never stop. While local jobs are spawned, SIGINT is set back to Python's default handler
    (children start with the default action); the caller's disposition is restored afterwards.
    """
    if not local or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: leave it as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def submit_runs(reg, config: ExperimentConfig, runs: Sequence[RunRecord], *, executor: ExecutorKind,
                paths: LaunchPaths, job_kind: str = "pipeline", max_parallel: int | None = None,
                signal_delay_s: int | None = None) -> LaunchReport:
    """Submit ``runs`` (one array per ladder rung), write the manifest, mark them submitted.

    The manifest is rewritten after *each* accepted array, so a launcher killed between two arrays
    loses none of them. On SLURM the kind's preparation (the ``pipeline`` kind's missing datasets) runs
    first as a CPU-only array (:mod:`slurm.prepare`) that the GPU arrays depend on.
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
    delay = signal_delay_s or config.executor.signal_delay_s
    context = {"config": config.model_dump(mode="json"), "dataset_cache": str(paths.datasets),
               "root": str(paths.root)}
    dataset_job = None
    if executor == "slurm" and config.executor.dataset_array:
        from slurm.prepare import submit_preparation

        dataset_job = submit_preparation(config, [_spec_of(r) for r in runs], paths, folder, job_kind)
    job_ids: dict[str, str] = {}
    submitted_jobs: list[Any] = []
    started: dict[str, float] = {}
    arrays = 0
    failure: SubmitError | None = None
    t0 = time.perf_counter()
    for step in plan:
        size_name, params = step["model_size"], step["parameters"]
        if dataset_job:
            extra = {**params.get("slurm_additional_parameters", {}), "dependency": f"afterany:{dataset_job}"}
            params = {**params, "slurm_additional_parameters": extra}
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
        rung_context = {**context, "signal_grace_s": grace_s(params.get("slurm_signal_delay_s", delay))}
        runners = [_runner(job_kind, ref, r, paths, rung_context) for r in group]
        try:
            with interruptible_children(executor == "local"), ex.batch():
                jobs = [ex.submit(fn) for fn in runners]
        except Exception as err:  # sbatch refused: submitit raises its own error types with sbatch's stderr
            failure = _submit_error(err, size_name)
            break
        arrays += 1
        accepted = {}
        for r, job in zip(group, jobs):
            accepted[r.run_id] = job_ids[r.run_id] = str(job.job_id)
            submitted_jobs.append(job)
            if executor == "local":
                LOCAL_JOBS[str(job.job_id)] = job
                t = process_start(int(job.job_id)) if str(job.job_id).isdigit() else None
                if t is not None:  # the controller was just started: its PID cannot have been reused yet
                    started[str(job.job_id)] = t
        manifest = LaunchManifest(launch_id=launch_id, experiment=experiment, executor=executor,
                                  job_kind=job_kind, submitit_folder=str(folder), created_at=datetime.now(UTC),
                                  jobs=job_ids, started=started, dataset_job=dataset_job)
        atomic_write_json(paths.manifest(launch_id), manifest.model_dump(mode="json"))  # after every array
        reg.mark_submitted(accepted)
    submit_s = time.perf_counter() - t0
    if executor == "debug":
        for job in submitted_jobs:  # in-process, one after the other; the runner records failures itself
            job.results()
    if failure is not None:
        raise failure
    return LaunchReport(launch_id=launch_id if job_ids else None, experiment=experiment, executor=executor,
                        submitted=list(job_ids), job_ids=job_ids, arrays=arrays, submit_s=submit_s)


def grace_s(signal_delay_s: float) -> float:
    """Seconds a job may take to save after SIGUSR2 before submitit requeues it anyway: the signal delay less
    the time the requeue itself needs (60 s, or half of a short delay)."""
    return max(5.0, signal_delay_s - min(60.0, signal_delay_s / 2))


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
                                               signal_delay_s=signal_delay_s or config.executor.signal_delay_s,
                                               requeue=config.executor.requeue)}
            for name, ids in groups.items()]


def _runner(kind: str, ref: str, r: RunRecord, paths: LaunchPaths, context: dict[str, Any]):
    from slurm.job import JobRunner

    return JobRunner(kind, ref, _spec_of(r).model_dump(mode="json"), str(paths.workdir(r.run_id)),
                     str(paths.results), context)

