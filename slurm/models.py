"""Contracts of the launcher: launch manifests and the reports of launch, sync and cancel.

Imports only pydantic and the standard library.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ExecutorKind", "LaunchManifest", "LaunchReport", "SyncReport", "CancelReport", "JobState",
           "PreflightCheck", "PreflightReport", "RungCalibration", "CostCalibration"]

ExecutorKind = Literal["slurm", "local", "debug"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class LaunchManifest(_Frozen):
    """What one launch submitted; written (atomically) next to its submitit folder right after submission."""

    launch_id: str
    """Id of the launch (UTC timestamp + random suffix); also the name of its folder."""
    experiment: str
    """Experiment name."""
    executor: ExecutorKind
    """submitit executor used."""
    job_kind: str
    """Registered job kind every job of this launch runs."""
    submitit_folder: str
    """The fresh submitit folder of this launch (logs, pickles)."""
    created_at: datetime
    """When the jobs were submitted (UTC)."""
    jobs: dict[str, str] = Field(default_factory=dict)
    """``run_id -> scheduler job id`` (``<array>_<index>`` for SLURM arrays, a PID for local jobs)."""
    started: dict[str, float] = Field(default_factory=dict)
    """``job id -> start time`` of each local job's controller process (seconds since the epoch): a PID is
    signalled or called alive only while its start time still matches (PIDs are reused)."""
    dataset_job: str | None = None
    """SLURM array id of the CPU-only dataset array this launch's GPU arrays depend on (None: none was needed)."""


class LaunchReport(_Frozen):
    """Outcome of :func:`slurm.launcher.launch`."""

    launch_id: str | None
    """Id of the launch, None when nothing was submitted."""
    experiment: str
    """Experiment name."""
    executor: ExecutorKind
    """Executor used."""
    submitted: list[str] = Field(default_factory=list)
    """Run ids submitted."""
    job_ids: dict[str, str] = Field(default_factory=dict)
    """``run_id -> job id`` of the submitted runs."""
    arrays: int = 0
    """Scheduler submissions made (one job array per ladder rung)."""
    left_pending: list[str] = Field(default_factory=list)
    """Runs eligible but not submitted (local executor slots full)."""
    submit_s: float = 0.0
    """Wall time of the submission calls, in seconds."""


class SyncReport(_Frozen):
    """Outcome of :func:`slurm.sync.sync`."""

    ingested: int = 0
    """Result files ingested now."""
    duplicate: int = 0
    """Result files already ingested before (skipped)."""
    problems: list[str] = Field(default_factory=list)
    """Result files not usable (truncated, unknown run...), one line each."""
    transitions: dict[str, str] = Field(default_factory=dict)
    """``run_id -> new status`` decided from scheduler states (runs without a result file)."""
    retried: list[str] = Field(default_factory=list)
    """Failed runs resubmitted (attempts below ``executor.max_attempts``)."""
    active: int = 0
    """Runs still submitted or running after this sync."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Runs per status after this sync."""


class CancelReport(_Frozen):
    """Outcome of :func:`slurm.launcher.cancel`."""

    cancelled: list[str] = Field(default_factory=list)
    """Run ids recorded as cancelled."""
    job_ids: list[str] = Field(default_factory=list)
    """Scheduler job ids that were sent a cancel."""
    errors: list[str] = Field(default_factory=list)
    """Cancel commands that failed, one line each."""


class JobState(_Frozen):
    """A scheduler's view of one job, mapped onto run states."""

    job_id: str
    """Scheduler job id."""
    raw: str
    """The scheduler's own state word (``RUNNING``, ``CANCELLED by 0``, ``TIMEOUT``, a local process state)."""
    status: Literal["submitted", "running", "done", "failed", "cancelled", "unknown"]
    """Run state it maps to; ``done`` means the job ended normally (its result file decides)."""


class PreflightCheck(_Frozen):
    """One check of ``toolscale preflight``."""

    name: str
    """What was checked (``chat template``, ``storage``, ``torch/CUDA``, ``train step``...)."""
    status: Literal["ok", "warn", "fail", "skip"]
    """``fail`` stops the launch (exit 2); ``warn`` is worth reading; ``skip`` does not apply."""
    detail: str
    """One line: the value found and, for a failure, what to change."""
    rung: str | None = None
    """The ladder rung it concerns (None: the whole experiment)."""
    where: Literal["login", "node"] = "login"
    """Run where ``toolscale`` was typed, or in a job on a compute node with the rung's resources."""
    seconds: float | None = None
    """Wall time of the check, in seconds (training and eval steps)."""


class PreflightReport(_Frozen):
    """What ``toolscale preflight --json`` prints."""

    experiment: str
    """Experiment name."""
    ok: bool
    """True when no check failed."""
    checks: list[PreflightCheck] = Field(default_factory=list)
    """Every check, login ones first."""


class RungCalibration(_Frozen):
    """Measured compute of one rung's done runs (``toolscale calibrate-cost``)."""

    model_size: str
    """Ladder rung."""
    runs: int
    """Done runs measured."""
    pflops: float
    """Their measured training FLOPs, in PFLOP (1e15)."""
    gpu_hours: float
    """GPU-hours spent training them (every attempt; evaluation and dataset time taken out)."""
    pflop_per_gpu_hour: float | None
    """Training throughput achieved, PFLOP per GPU-hour (None without GPU time)."""
    per_pflop: float | None
    """What 1e15 training FLOPs cost at that throughput, in the budget unit."""
    eval_gpu_s: float
    """GPU-seconds one run's evaluation took (mean)."""
    source: str
    """Where the GPU time comes from: ``sacct`` (every attempt) or ``jobs`` (what each job recorded)."""


class CostCalibration(_Frozen):
    """What ``toolscale calibrate-cost --json`` prints."""

    experiment: str
    """Experiment name."""
    unit: str
    """Budget unit of ``per_pflop``."""
    gpu_hour_cost: float | None
    """Price of one GPU-hour in the budget unit (1 for ``gpu_hours``)."""
    rungs: list[RungCalibration] = Field(default_factory=list)
    """Per rung."""
    per_pflop: float | None = None
    """Suggested ``[cost] per_pflop``: GPU-hours over all measured runs / PFLOPs, at ``gpu_hour_cost``."""
    eval_gpu_s_per_run: float | None = None
    """Suggested ``[cost] eval_gpu_s_per_run`` (mean over runs)."""
    advice: str = ""
    """One paragraph: the numbers to put in the config, or why there are none."""
