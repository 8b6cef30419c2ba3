"""Submission parameters of a ladder rung: pure, data in (rung, SLURM spec) and a dict out.

The dict is what :meth:`submitit.AutoExecutor.update_parameters` takes: shared keys
(``timeout_min``, ``cpus_per_task``, ``mem_gb``, ``gpus_per_node``, ``name``) apply to
every executor; ``slurm_``-prefixed keys only to SLURM. Nothing here talks to a scheduler.
"""

from __future__ import annotations

import re
from typing import Any

from slurm.errors import SubmitError
from toolscale.config import ModelSize, SlurmSpec

__all__ = ["executor_parameters", "DEFAULT_SIGNAL_DELAY_S", "MIN_TIMEOUT_MIN"]

DEFAULT_SIGNAL_DELAY_S = 300
"""Seconds before the time limit at which SLURM sends USR2 (training saves a checkpoint, then the job requeues).

Long enough to write a 4B run's checkpoint (about 50 GB of fp32 weights and Adam state) to a shared file
system. slurmctld checks time limits every 30 s (``PERIODIC_TIMEOUT``) and sends the warning at
the first check where ``now + delay + 30 >= end``, so USR2 arrives 300-330 s before the
limit with the default (``executor.signal_delay_s``)."""

SLURM_CHECK_PERIOD_S = 30
"""slurmctld's time-limit check period: the warning signal may come this much earlier."""

JOB_STARTUP_S = 10
"""Seconds a job needs to install submitit's signal handler; an earlier USR2 kills it."""

MIN_TIMEOUT_MIN = 1
"""SLURM's time limits have a resolution of one minute."""

_FLAG = re.compile(r"^[a-z][a-z0-9_-]*$")
_RESERVED = frozenset({"array", "output", "error", "signal", "open_mode", "open-mode", "job_name", "time",
                       "cpus_per_task", "mem", "gpus_per_node", "partition", "account", "qos", "constraint",
                       "requeue", "dependency", "ntasks_per_node", "nodes", "gres", "gpus"})


def executor_parameters(size: ModelSize, slurm: SlurmSpec, *, max_parallel: int, job_name: str,
                        signal_delay_s: int = DEFAULT_SIGNAL_DELAY_S, requeue: bool = True) -> dict[str, Any]:
    """AutoExecutor parameters for the runs of one ladder rung.

    Parameters
    ----------
    size : the rung; its ``gpus``, ``cpus``, ``mem_gb`` and ``timeout_min`` set the request. A rung of
        several GPUs runs one task per GPU (``--ntasks-per-node = gpus``, ``cpus`` shared out among them):
        torch distributed, one process per device.
    slurm : pass-through of partition, account, qos, constraint and extra sbatch flags.
    max_parallel : array tasks running at once (``--array=0-N%max_parallel``).
    job_name : ``--job-name`` of the array.
    signal_delay_s : seconds before the time limit that USR2 is sent (checkpoint + requeue); capped
        so that even a signal sent one check period early (``limit - delay - 30`` s after the
        start) comes after the job's first ``JOB_STARTUP_S`` seconds.
    requeue : add ``--requeue`` (SLURM may requeue the job after preemption or a node failure).

    Returns
    -------
    dict of shared and ``slurm_``-prefixed parameters (None values dropped).

    Raises
    ------
    SubmitError
        An extra sbatch flag that is not a flag name, or that overrides one set here.
    """
    if max_parallel < 1:
        raise SubmitError(f"max_parallel must be >= 1, got {max_parallel}")
    extra: dict[str, Any] = {}
    for key, value in slurm.additional_parameters.items():
        if not _FLAG.match(key):
            raise SubmitError(f"executor.slurm.additional_parameters: {key!r} is not an sbatch flag name "
                              f"(expected lowercase like mail_type)")
        if key in _RESERVED:
            raise SubmitError(f"executor.slurm.additional_parameters: {key!r} is set by toolscale "
                              f"(use the ladder rung or executor.slurm.{key.replace('-', '_')} instead)")
        extra[key] = value
    if requeue:
        extra["requeue"] = True
    timeout = max(MIN_TIMEOUT_MIN, int(size.timeout_min))
    tasks = int(size.gpus) if size.gpus > 1 else 1
    params: dict[str, Any] = {
        "name": job_name,
        "timeout_min": timeout,
        "cpus_per_task": max(1, int(size.cpus) // tasks),
        "tasks_per_node": tasks if tasks > 1 else None,
        "mem_gb": float(size.mem_gb),
        "gpus_per_node": int(size.gpus) if size.gpus else None,
        "slurm_partition": slurm.partition,
        "slurm_account": slurm.account,
        "slurm_qos": slurm.qos,
        "slurm_constraint": slurm.constraint,
        "slurm_array_parallelism": int(max_parallel),
        "slurm_signal_delay_s": int(min(signal_delay_s,
                                        max(5, timeout * 60 - SLURM_CHECK_PERIOD_S - JOB_STARTUP_S))),
        "slurm_additional_parameters": extra or None,
    }
    return {k: v for k, v in params.items() if v is not None}
