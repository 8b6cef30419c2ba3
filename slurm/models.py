"""Contracts of the launcher: launch manifests and the reports of launch, sync and cancel.

Imports only pydantic and the standard library.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ExecutorKind", "LaunchManifest", "LaunchReport", "SyncReport", "CancelReport", "JobState"]

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
