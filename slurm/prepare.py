"""The CPU-only preparation array: what a launch's GPU jobs need is built before they start.

A job kind may register a *preparation* (:data:`slurm.jobs.PREPARATIONS`, by reference): a function
``prepare(config, runs, cache) -> list of callables``, each callable one CPU task. For the ``pipeline`` kind
these build every dataset of the launch not yet complete in the cache (synthesis and probing run MCP servers
and a CPU probe for minutes; inside a GPU job the GPUs would sit idle meanwhile, and the rung arrays would race
for the same datasets at their start).

:func:`submit_preparation` submits them as one SLURM array, and every GPU array of the launch then depends on
it with ``--dependency=afterany:<array>``. ``afterany``, not ``afterok``: if a preparation task fails, the GPU
job still starts, builds what it needs itself under the same lock, and reports any error as its own result,
instead of pending forever on a dependency that can never be met.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grid.models import RunSpec
from slurm.errors import SubmitError
from slurm.jobs import PREPARATIONS, resolve_ref
from slurm.paths import LaunchPaths
from toolscale.config import ExperimentConfig

__all__ = ["preparation_tasks", "submit_preparation"]


def preparation_tasks(config: ExperimentConfig, runs: list[RunSpec], paths: LaunchPaths,
                      job_kind: str) -> list[Any]:
    """The CPU tasks ``job_kind``'s preparation asks for (none when it registers no preparation)."""
    ref = PREPARATIONS.get(job_kind)
    return list(resolve_ref(ref)(config, runs, paths.datasets)) if ref else []


def submit_preparation(config: ExperimentConfig, runs: list[RunSpec], paths: LaunchPaths, folder: str | Path,
                       job_kind: str) -> str | None:
    """Submit the preparation array of ``runs``; its SLURM array id, or None when nothing needs preparing.

    Raises :class:`~slurm.errors.SubmitError` with sbatch's message when the array is refused."""
    import submitit

    tasks = preparation_tasks(config, runs, paths, job_kind)
    if not tasks:
        return None
    ex_spec, slurm = config.executor, config.executor.slurm
    ex = submitit.AutoExecutor(folder=Path(folder) / "prepare", cluster="slurm")
    params = {"name": f"ts-{config.experiment.name}-data"[:60], "timeout_min": ex_spec.dataset_timeout_min,
              "cpus_per_task": ex_spec.dataset_cpus, "mem_gb": ex_spec.dataset_mem_gb,
              "slurm_partition": slurm.cpu_partition or slurm.partition, "slurm_account": slurm.account,
              "slurm_qos": slurm.qos, "slurm_array_parallelism": ex_spec.max_parallel,
              "slurm_additional_parameters": {k: v for k, v in slurm.additional_parameters.items()
                                              if k not in ("gres", "gpus")} or None}
    ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    try:
        with ex.batch():
            jobs = [ex.submit(task) for task in tasks]
    except Exception as err:  # sbatch refused
        raise SubmitError(f"the scheduler refused the preparation array: {str(err).strip().splitlines()[-1:]}") \
            from None
    return str(jobs[0].job_id).split("_")[0]
