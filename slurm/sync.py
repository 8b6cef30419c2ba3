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
from pathlib import Path

from grid.models import RUN_STATUSES
from slurm.errors import LaunchError, SubmitError
from slurm.submit import ACTIVE, LOCAL_JOBS, read_manifests, submit_runs
from slurm.models import JobState, LaunchManifest, SyncReport
from slurm.paths import LaunchPaths
from toolscale.config import ExperimentConfig

__all__ = ["sync", "wait", "slurm_states", "local_state", "map_slurm_state", "log_tail", "LOG_TAIL_LINES"]

LOG_TAIL_LINES = 30
"""Lines of a job's stderr log stored as the error of a run that died without a result."""

_SLURM_ACTIVE = {"PENDING": "submitted", "REQUEUED": "submitted", "REQUEUE_HOLD": "submitted",
                 "REQUEUE_FED": "submitted", "CONFIGURING": "submitted", "SUSPENDED": "submitted",
                 "RESV_DEL_HOLD": "submitted", "RUNNING": "running", "COMPLETING": "running",
                 "STAGE_OUT": "running", "SIGNALING": "running", "RESIZING": "running", "PREEMPTED": "running"}
_SLURM_FAILED = {"FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "REVOKED"}


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


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) submitit controller; a reused PID is not."""
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


def local_state(job_id: str) -> JobState:
    """State of a local submitit job (its id is the controller's PID)."""
    job = LOCAL_JOBS.get(job_id)
    if job is not None:
        raw = job.state
        status = "running" if raw == "RUNNING" else ("cancelled" if raw == "INTERRUPTED" else "done")
        if status != "running":
            LOCAL_JOBS.pop(job_id, None)
        return JobState(job_id=job_id, raw=raw, status=status)
    try:
        alive = _pid_alive(int(job_id))
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
            out[j] = local_state(j)
        elif m.executor == "debug":
            out[j] = JobState(job_id=j, raw="DONE", status="done")
    return out


def _death_error(state: JobState, manifest: LaunchManifest | None) -> str:
    why = {"done": "the job ended without writing a result file"}.get(state.status, f"job state {state.raw}")
    if state.raw.startswith("TIMEOUT"):
        why = "timed out (TIMEOUT) and was not requeued"
    tail = log_tail(manifest.submitit_folder, state.job_id) if manifest else ""
    return f"{why} (job {state.job_id})" + (f"\n{tail}" if tail else "")


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
    from grid.registry import Registry
    from grid.results import read_results

    experiment = experiment or (config.experiment.name if config else None)
    paths = LaunchPaths.of(folder or (config.executor.folder if config else "./runs"))
    manifests = read_manifests(paths, experiment)
    latest: dict[str, tuple[str, LaunchManifest]] = {}
    launched: dict[tuple[str, str], LaunchManifest] = {}  # (run, job id): job ids repeat after a cluster reset
    for m in manifests:
        for rid, jid in m.jobs.items():
            latest[rid] = (jid, m)
            launched[(rid, jid)] = m

    def manifest_of(r) -> LaunchManifest | None:
        return launched.get((r.run_id, r.job_id or ""))
    with Registry(registry_path) as reg:
        # 1. launches the registry never heard of (launcher killed after submitting)
        orphans = {r.run_id: latest[r.run_id][0] for r in reg.runs(experiment, status="pending")
                   if r.run_id in latest and latest[r.run_id][0] != r.job_id}
        if orphans:
            reg.mark_submitted(orphans)
        # 2. scheduler states of live jobs, before reading results
        live = reg.runs(experiment, status=list(ACTIVE))
        jobs = {r.job_id: m for r in live if (m := manifest_of(r)) is not None}
        scheduler_problems: list[str] = [
            f"run {r.run_id}: job {r.job_id} is in no launch manifest under {paths.root} (wrong --folder?); "
            f"state left as is" for r in live if manifest_of(r) is None]
        try:
            states = _states(jobs)
        except LaunchError as err:  # the scheduler did not answer: still ingest what the jobs wrote
            states = {}
            scheduler_problems.append(str(err))
        # 3. result files
        results, problems = read_results(paths.results) if paths.results.exists() else ([], [])
        if experiment is not None:
            results = [t for t in results if t[0].experiment == experiment]
        ingest = reg.ingest(results)
        # 4. live runs without a result take their scheduler state
        changes: dict[str, tuple[str, str | None]] = {}
        for r in reg.runs(experiment, status=list(ACTIVE)):
            state = states.get(r.job_id or "") if manifest_of(r) is not None else None
            if state is None:
                continue
            if state.status in ("submitted", "unknown") or state.status == r.status:
                continue
            if state.status == "running":
                changes[r.run_id] = ("running", None)
            elif state.status == "cancelled":
                changes[r.run_id] = ("cancelled", f"cancelled ({state.raw}, job {state.job_id})")
            else:
                changes[r.run_id] = ("failed", _death_error(state, manifest_of(r)))
        if changes:
            reg.set_statuses(changes)
        # 5. retries
        retried: list[str] = []
        if retry and config is not None:
            failed = [r for r in reg.runs(experiment, status="failed")
                      if r.attempts < config.executor.max_attempts and manifest_of(r) is not None]
            if failed:
                kinds: dict[tuple[str, str], list] = {}
                for r in failed:
                    m = manifest_of(r)
                    kinds.setdefault((m.executor, m.job_kind), []).append(r)
                for (executor, job_kind), group in kinds.items():
                    try:
                        rep = submit_runs(reg, config, group, executor=executor, paths=paths, job_kind=job_kind)
                    except (LaunchError, SubmitError) as err:  # the runs stay failed; the next sync tries again
                        scheduler_problems.append(f"retry of {len(group)} failed runs not submitted: {err}")
                        continue
                    retried.extend(rep.submitted)
        counts = {s: 0 for s in RUN_STATUSES}
        for exp, c in reg.status_counts(experiment).items():
            for s, n in c.items():
                counts[s] += n
    return SyncReport(ingested=ingest.ingested, duplicate=ingest.duplicate,
                      problems=problems + ingest.problems + scheduler_problems,
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
