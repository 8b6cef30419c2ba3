"""Sync: ingest result files idempotently and reconcile run states with the scheduler.

Order of one :func:`sync` (each step safe to repeat, so a sync interrupted anywhere
is finished by the next one):

1. launches a killed launcher left unrecorded (manifest written, registry not) are
   recorded: their runs become ``submitted`` with the manifest's job ids;
2. the scheduler is asked for the state of every live job (``sacct`` on SLURM, the
   process table locally) *before* result files are read, so a job that finished in
   between is seen with its result;
3. result files are ingested (content-hashed: a file is ingested once; truncated or
   foreign files are reported, never ingested);
4. live runs without a result take their scheduler state: running, cancelled, or
   failed (timed out, crashed, out of memory, ended without a result) with the tail of
   the job's log as error;
5. failed runs below ``executor.max_attempts`` are resubmitted (``retry``).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grid.models import RUN_STATUSES, IngestReport, RunRecord
from slurm.errors import LaunchError, SubmitError
from slurm.models import JobState, LaunchManifest, SyncReport
from slurm.paths import LaunchPaths
from slurm.process import same_process
from slurm.submit import ACTIVE, LOCAL_JOBS, read_manifests, submit_runs
from toolscale.config import ExperimentConfig

if TYPE_CHECKING:  # pragma: no cover
    from grid import Registry

__all__ = ["sync", "wait", "slurm_states", "local_state", "map_slurm_state", "log_tail", "LOG_TAIL_LINES"]

LOG_TAIL_LINES = 30
"""Lines of a job's stderr log stored as the error of a run that died without a result."""

_SLURM_ACTIVE = {"PENDING": "submitted", "REQUEUED": "submitted", "REQUEUE_HOLD": "submitted",
                 "REQUEUE_FED": "submitted", "CONFIGURING": "submitted", "SUSPENDED": "submitted",
                 "RESV_DEL_HOLD": "submitted", "RUNNING": "running", "COMPLETING": "running",
                 "STAGE_OUT": "running", "SIGNALING": "running", "RESIZING": "running"}
_SLURM_FAILED = {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "REVOKED", "PREEMPTED"}
"""Final states of a job record. ``PREEMPTED`` is final too: a job SLURM requeues after preemption shows its new
record (``PENDING``/``REQUEUED``, then ``RUNNING``) in ``sacct``; one it does not requeue is retried (a
preemption is not the run's fault, see :func:`slurm.preemption.classify`)."""


def map_slurm_state(raw: str) -> str:
    """Run state of a SLURM state word (``CANCELLED by 0`` -> cancelled, ``TIMEOUT`` -> failed...)."""
    word = raw.split()[0].rstrip("+") if raw.strip() else "UNKNOWN"
    if word in _SLURM_ACTIVE:
        return _SLURM_ACTIVE[word]
    if word == "COMPLETED":
        return "done"
    if word.startswith("CANCELLED"):
        return "cancelled"
    if word in _SLURM_FAILED:
        return "failed"
    return "unknown"


def slurm_states(job_ids: Iterable[str]) -> dict[str, JobState]:
    """States of SLURM jobs (``<id>`` or ``<array>_<index>``) from ``sacct`` (accounting needed).

    Jobs sacct does not know yet are absent from the result.
    """
    from submitit.slurm.slurm import SlurmInfoWatcher

    ids = sorted({j for j in job_ids if j})
    if not ids:
        return {}
    mains = sorted({j.split("_")[0] for j in ids})
    cmd = ["sacct", "-o", "JobID,State", "--parsable2", "-j", ",".join(mains)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as err:
        raise LaunchError(f"cannot read job states: {' '.join(cmd[:1])} failed ({err})") from None
    if proc.returncode != 0:
        raise LaunchError(f"cannot read job states: sacct said {proc.stderr.strip().splitlines()[-1:]}")
    info = SlurmInfoWatcher().read_info(proc.stdout)
    out = {}
    for j in ids:
        stats = info.get(j)
        if stats is None and "_" not in j:
            continue
        if stats is None:
            continue
        raw = stats.get("State", "UNKNOWN")
        out[j] = JobState(job_id=j, raw=raw, status=map_slurm_state(raw))
    return out


def _pid_alive(pid: int, started: float | None = None) -> bool:
    """Whether ``pid`` is the live (not zombie) submitit controller that was started at ``started``.

    With a recorded start time the PID counts only while that time still matches (a reused PID is another
    process); manifests from before start times were recorded fall back to the command line check.
    """
    if started is not None:
        return same_process(pid, started)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        if Path("/proc/self").exists():
            return False
        try:  # no /proc (macOS): existence only
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z" and b"submitit" in cmdline


def local_state(job_id: str, started: float | None = None) -> JobState:
    """State of a local submitit job (its id is the controller's PID, ``started`` its recorded start time)."""
    job = LOCAL_JOBS.get(job_id)
    if job is not None:
        raw = job.state
        status = "running" if raw == "RUNNING" else ("cancelled" if raw == "INTERRUPTED" else "done")
        if status != "running":
            LOCAL_JOBS.pop(job_id, None)
        return JobState(job_id=job_id, raw=raw, status=status)
    try:
        alive = _pid_alive(int(job_id), started)
    except ValueError:
        alive = False
    return JobState(job_id=job_id, raw="RUNNING" if alive else "EXITED", status="running" if alive else "done")


def log_tail(folder: str | Path, job_id: str, n: int = LOG_TAIL_LINES) -> str:
    """Last ``n`` lines of a submitit job's stderr log (``<job_id>_0_log.err``), or ''."""
    path = Path(folder) / f"{job_id}_0_log.err"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-n:])


def _states(jobs: dict[str, LaunchManifest]) -> dict[str, JobState]:
    slurm_ids = [j for j, m in jobs.items() if m.executor == "slurm"]
    out = slurm_states(slurm_ids) if slurm_ids else {}
    for j, m in jobs.items():
        if m.executor == "local":
            out[j] = local_state(j, m.started.get(j))
        elif m.executor == "debug":
            out[j] = JobState(job_id=j, raw="DONE", status="done")
    return out


def _death_error(state: JobState, manifest: LaunchManifest | None) -> str:
    why = {"done": "the job ended without writing a result file"}.get(state.status, f"job state {state.raw}")
    if state.raw.startswith("TIMEOUT"):
        why = "timed out (TIMEOUT) and was not requeued"
    tail = log_tail(manifest.submitit_folder, state.job_id) if manifest else ""
    return f"{why} (job {state.job_id})" + (f"\n{tail}" if tail else "")


@dataclass(frozen=True)
class _Launches:
    """What the launch manifests under the root say about the runs."""

    latest: dict[str, str]
    """Run id -> job id of its newest launch."""
    by_job: dict[tuple[str, str], LaunchManifest]
    """(run id, job id) -> its manifest (job ids repeat after a cluster reset, so the pair is the key)."""

    @classmethod
    def read(cls, paths: LaunchPaths, experiment: str | None) -> _Launches:
        latest: dict[str, str] = {}
        by_job: dict[tuple[str, str], LaunchManifest] = {}
        for m in read_manifests(paths, experiment):  # oldest first: the last one seen is the newest
            for rid, jid in m.jobs.items():
                latest[rid] = jid
                by_job[(rid, jid)] = m
        return cls(latest=latest, by_job=by_job)

    def of(self, run: RunRecord) -> LaunchManifest | None:
        """The manifest of the run's current job, or None when no launch under this root made it."""
        return self.by_job.get((run.run_id, run.job_id or ""))


def _record_orphans(reg: Registry, experiment: str | None, launches: _Launches) -> None:
    """Step 1: pending runs a killed launcher submitted (manifest written, registry not) become submitted."""
    orphans = {r.run_id: launches.latest[r.run_id] for r in reg.runs(experiment, status="pending")
               if r.run_id in launches.latest and launches.latest[r.run_id] != r.job_id}
    if orphans:
        reg.mark_submitted(orphans)


def _live_states(reg: Registry, experiment: str | None, launches: _Launches,
                 paths: LaunchPaths) -> tuple[dict[str, JobState], list[str]]:
    """Step 2: ``(job id -> state, problems)`` of every live run's job, asked before results are read."""
    live = reg.runs(experiment, status=list(ACTIVE))
    jobs = {r.job_id: m for r in live if (m := launches.of(r)) is not None}
    problems = [f"run {r.run_id}: job {r.job_id} is in no launch manifest under {paths.root} (wrong --folder?); "
                f"state left as is" for r in live if launches.of(r) is None]
    try:
        return _states(jobs), problems
    except LaunchError as err:  # the scheduler did not answer: still ingest what the jobs wrote
        return {}, [*problems, str(err)]


def _ingest_results(reg: Registry, paths: LaunchPaths, experiment: str | None) -> tuple[IngestReport, list[str]]:
    """Step 3: ``(ingest report, unreadable files)`` of the result files under the root."""
    from grid import read_results

    results, problems = read_results(paths.results) if paths.results.exists() else ([], [])
    if experiment is not None:
        results = [t for t in results if t[0].experiment == experiment]
    return reg.ingest(results), problems


def _transition(run: RunRecord, state: JobState | None, manifest: LaunchManifest | None
                ) -> tuple[str, str | None] | None:
    """The ``(status, error)`` a live run without a result moves to, or None to leave it."""
    if state is None or state.status in ("submitted", "unknown") or state.status == run.status:
        return None
    if state.status == "running":
        return "running", None
    if state.status == "cancelled":
        return "cancelled", f"cancelled ({state.raw}, job {state.job_id})"
    return "failed", _death_error(state, manifest)


def _reconcile(reg: Registry, experiment: str | None, launches: _Launches,
               states: dict[str, JobState]) -> dict[str, tuple[str, str | None]]:
    """Step 4: live runs without a result take their scheduler state; returns ``run id -> (status, error)``."""
    changes: dict[str, tuple[str, str | None]] = {}
    for r in reg.runs(experiment, status=list(ACTIVE)):
        manifest = launches.of(r)
        change = _transition(r, states.get(r.job_id or "") if manifest is not None else None, manifest)
        if change is not None:
            changes[r.run_id] = change
    if changes:
        reg.set_statuses(changes)
    return changes


def _retry(reg: Registry, config: ExperimentConfig, experiment: str | None, launches: _Launches,
           paths: LaunchPaths) -> tuple[list[str], list[str]]:
    """Step 5: ``(resubmitted run ids, problems)``: failed runs below ``executor.max_attempts``, by executor and kind.

    Out-of-memory, config and duplicate-run failures are not retried (:data:`slurm.preemption.NOT_RETRIED`: a
    retry would fail the same way); the SLURM job a retry replaces is cancelled first, so the two never run
    at once (the run's lease would make the new one wait for the old one anyway)."""
    from slurm.preemption import NOT_RETRIED, cancel_replaced, classify

    failed = [r for r in reg.runs(experiment, status="failed")
              if r.attempts < config.executor.max_attempts and launches.of(r) is not None
              and classify(r.error) not in NOT_RETRIED]
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for r in failed:
        m = launches.of(r)
        groups.setdefault((m.executor, m.job_kind), []).append(r)
    retried: list[str] = []
    problems: list[str] = []
    for (executor, job_kind), group in groups.items():
        if executor == "slurm":
            problems += cancel_replaced([r.job_id for r in group if r.job_id])
        try:
            rep = submit_runs(reg, config, group, executor=executor, paths=paths, job_kind=job_kind)
        except (LaunchError, SubmitError) as err:  # the runs stay failed; the next sync tries again
            problems.append(f"retry of {len(group)} failed runs not submitted: {err}")
            continue
        retried.extend(rep.submitted)
    return retried, problems


def _counts(reg: Registry, experiment: str | None) -> dict[str, int]:
    """Runs per status, summed over the experiments synced (every status present)."""
    counts = {s: 0 for s in RUN_STATUSES}
    for c in reg.status_counts(experiment).values():
        for s, n in c.items():
            counts[s] += n
    return counts


def sync(registry_path: str | Path, *, config: ExperimentConfig | None = None, experiment: str | None = None,
         folder: str | Path | None = None, retry: bool = True) -> SyncReport:
    """Ingest result files and update run states from the scheduler; retry failed runs (see module doc).

    Parameters
    ----------
    registry_path : the DuckDB registry.
    config : the experiment config (needed for ``retry``: executor, ladder, max attempts).
    experiment : experiment to sync (default: the config's; None without config = all runs).
    folder : executor root folder (default: the config's ``executor.folder``, else ``./runs``).
    retry : resubmit failed runs whose attempts are below ``executor.max_attempts``.
    """
    from grid import Registry

    experiment = experiment or (config.experiment.name if config else None)
    paths = LaunchPaths.of(folder or (config.executor.folder if config else "./runs"))
    launches = _Launches.read(paths, experiment)
    with Registry(registry_path) as reg:
        _record_orphans(reg, experiment, launches)
        states, scheduler_problems = _live_states(reg, experiment, launches, paths)
        ingest, file_problems = _ingest_results(reg, paths, experiment)
        changes = _reconcile(reg, experiment, launches, states)
        retried, retry_problems = _retry(reg, config, experiment, launches, paths) if retry and config else ([], [])
        counts = _counts(reg, experiment)
    return SyncReport(ingested=ingest.ingested, duplicate=ingest.duplicate,
                      problems=file_problems + ingest.problems + scheduler_problems + retry_problems,
                      transitions={k: v[0] for k, v in changes.items()}, retried=retried,
                      active=counts["submitted"] + counts["running"], counts=counts)


def wait(registry_path: str | Path, *, config: ExperimentConfig, folder: str | Path | None = None,
         poll_s: float = 5.0, timeout_s: float | None = None, retry: bool = True,
         top_up: Callable[[], object] | None = None,
         progress: Callable[[SyncReport], None] | None = None) -> SyncReport:
    """Sync every ``poll_s`` seconds until no run is live and ``top_up`` starts nothing more.

    ``top_up`` is called after each sync that leaves pending runs (the local executor
    uses it to start them as slots free up) and returns what it started (a report with
    ``submitted``, or a count); ``progress`` receives each report (after the top-up). Raises :class:`LaunchError`
    after ``timeout_s`` seconds.
    """
    t0 = time.monotonic()
    while True:
        report = sync(registry_path, config=config, folder=folder, retry=retry)
        started = 0
        if top_up is not None and report.counts.get("pending", 0):
            started = _started(top_up())
            if started:
                report = sync(registry_path, config=config, folder=folder, retry=False)
        if progress:  # after the top-up, so "live" counts the runs just started
            progress(report)
        if report.active == 0 and not started:
            return report
        if timeout_s is not None and time.monotonic() - t0 > timeout_s:
            raise LaunchError(f"runs still live after {timeout_s:g} s: {report.active} "
                              f"(toolscale sync later picks them up)")
        time.sleep(poll_s)


def _started(outcome: object) -> int:
    submitted = getattr(outcome, "submitted", None)
    if submitted is not None:
        return len(submitted)
    return int(outcome) if isinstance(outcome, int) else int(bool(outcome))
