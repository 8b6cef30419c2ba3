"""The CPU-only dataset array: every dataset a launch needs is built before its GPU jobs start.

Synthesis and probing run MCP servers and a CPU probe for minutes; inside a GPU job the GPUs would sit idle
meanwhile, and three rung arrays would race for the same datasets at their start. So a SLURM launch of the
``pipeline`` kind first submits one array of CPU tasks, one per dataset not yet complete in the cache
(:func:`dataset_plan`), and every GPU array depends on it with ``--dependency=afterany:<array>``. ``afterany``,
not ``afterok``: if a dataset task fails, the GPU job that needs it still starts, builds the dataset itself
under the same lock (:func:`slurm.pipeline.ensure_dataset`), and reports any error as its own result, instead
of waiting forever on a dependency that can never be met.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grid.models import RunSpec
from slurm.errors import SubmitError
from slurm.paths import LaunchPaths
from toolscale.config import ExperimentConfig

__all__ = ["dataset_plan", "submit_dataset_array", "DatasetJob"]


def dataset_plan(config: ExperimentConfig, runs: list[RunSpec], cache: str | Path) -> dict[str, RunSpec]:
    """``dataset key -> one run that needs it`` for the datasets of ``runs`` not yet complete in ``cache``."""
    from slurm.pipeline import COMPLETE_MARKER, dataset_key, job_recipe

    out: dict[str, RunSpec] = {}
    for run in runs:
        key = dataset_key(job_recipe(run, config).identity())
        if key not in out and not (Path(cache) / key / COMPLETE_MARKER).exists():
            out[key] = run
    return out


class DatasetJob:
    """A submitit callable that builds one run's dataset in the shared cache (and the shared tokenizer)."""

    def __init__(self, config: dict[str, Any], run: dict[str, Any], cache: str) -> None:
        self.config, self.run, self.cache = config, run, cache

    def __call__(self) -> str:
        from slurm.pipeline import ensure_tokenizer, prepare_dataset

        cfg = ExperimentConfig.model_validate(self.config)
        folder, key, _ = prepare_dataset(RunSpec.model_validate(self.run), cfg, self.cache)
        if cfg.train.tokenizer == "shared" and any(not s.pretrained for s in cfg.ladder):
            ensure_tokenizer(cfg, self.cache)
        return str(folder)


def submit_dataset_array(config: ExperimentConfig, runs: list[RunSpec], paths: LaunchPaths,
                         folder: str | Path) -> str | None:
    """Submit the CPU array of the missing datasets of ``runs``; its SLURM array id, or None when none is missing.

    Raises :class:`~slurm.errors.SubmitError` with sbatch's message when the array is refused."""
    import submitit

    plan = dataset_plan(config, runs, paths.datasets)
    if not plan:
        return None
    ex_spec, slurm = config.executor, config.executor.slurm
    ex = submitit.AutoExecutor(folder=Path(folder) / "datasets", cluster="slurm")
    params = {"name": f"ts-{config.experiment.name}-data"[:60], "timeout_min": ex_spec.dataset_timeout_min,
              "cpus_per_task": ex_spec.dataset_cpus, "mem_gb": ex_spec.dataset_mem_gb,
              "slurm_partition": slurm.cpu_partition or slurm.partition, "slurm_account": slurm.account,
              "slurm_qos": slurm.qos, "slurm_array_parallelism": ex_spec.max_parallel,
              "slurm_additional_parameters": {k: v for k, v in slurm.additional_parameters.items()
                                              if k not in ("gres", "gpus")} or None}
    ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    cfg_json = config.model_dump(mode="json")
    try:
        with ex.batch():
            jobs = [ex.submit(DatasetJob(cfg_json, run.model_dump(mode="json"), str(paths.datasets)))
                    for run in plan.values()]
    except Exception as err:  # sbatch refused
        raise SubmitError(f"the scheduler refused the dataset array: {str(err).strip().splitlines()[-1:]}") from None
    return str(jobs[0].job_id).split("_")[0]
