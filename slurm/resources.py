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

DEFAULT_SIGNAL_DELAY_S = 60
"""Seconds before the time limit at which SLURM sends USR2 (submitit checkpoints and requeues).

slurmctld checks time limits every 30 s (``PERIODIC_TIMEOUT``) and sends the warning at
the first check where ``now + delay + 30 >= end``, so USR2 arrives 60-90 s before the
limit with the default."""

SLURM_CHECK_PERIOD_S = 30
"""slurmctld's time-limit check period: the warning signal may come this much earlier."""

JOB_STARTUP_S = 10
"""Seconds a job needs to install submitit's signal handler; an earlier USR2 kills it."""

MIN_TIMEOUT_MIN = 1
"""SLURM's time limits have a resolution of one minute."""

_FLAG = re.compile(r"^[a-z][a-z0-9_-]*$")
_RESERVED = frozenset({"array", "output", "error", "signal", "open_mode", "open-mode", "job_name", "time",
                       "cpus_per_task", "mem", "gpus_per_node", "partition", "account", "qos", "constraint"})


def executor_parameters(size: ModelSize, slurm: SlurmSpec, *, max_parallel: int, job_name: str,
                        signal_delay_s: int = DEFAULT_SIGNAL_DELAY_S) -> dict[str, Any]:
    """AutoExecutor parameters for the runs of one ladder rung.

    Parameters
    ----------
    size : the rung; its ``gpus``, ``cpus``, ``mem_gb`` and ``timeout_min`` set the request.
    slurm : pass-through of partition, account, qos, constraint and extra sbatch flags.
    max_parallel : array tasks running at once (``--array=0-N%max_parallel``).
    job_name : ``--job-name`` of the array.
    signal_delay_s : seconds before the time limit that USR2 is sent (checkpoint + requeue); capped
        so that even a signal sent one check period early (``limit - delay - 30`` s after the
        start) comes after the job's first ``JOB_STARTUP_S`` seconds.

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
    timeout = max(MIN_TIMEOUT_MIN, int(size.timeout_min))
    params: dict[str, Any] = {
        "name": job_name,
        "timeout_min": timeout,
        "cpus_per_task": int(size.cpus),
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
