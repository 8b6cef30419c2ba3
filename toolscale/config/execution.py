"""Where runs execute (SLURM, local) and what they cost."""

from __future__ import annotations

from typing import Literal

from pydantic import Field


from toolscale.config.base import _Frozen

__all__ = ["CostSpec", "ExecutorSpec", "SlurmSpec"]


class SlurmSpec(_Frozen):
    """SLURM pass-through parameters."""

    partition: str | None = None
    """``--partition``."""
    account: str | None = None
    """``--account``."""
    qos: str | None = None
    """``--qos``."""
    constraint: str | None = None
    """``--constraint``."""
    additional_parameters: dict[str, str | int | bool] = Field(default_factory=dict)
    """Extra sbatch flags, e.g. ``{mail_type = "FAIL"}``."""
    cpu_partition: str | None = None
    """Partition of the CPU-only jobs (the dataset array); default ``partition``."""


class ExecutorSpec(_Frozen):
    """Where runs execute (slurm/)."""

    kind: Literal["local", "slurm", "debug"] = "local"
    """submitit executor."""
    max_parallel: int = Field(default=1, ge=1)
    """Runs at once (SLURM array parallelism, local workers)."""
    max_attempts: int = Field(default=2, ge=1)
    """Attempts per run before it stays failed."""
    folder: str = "./runs"
    """Root of submitit folders and result files."""
    slurm: SlurmSpec = Field(default_factory=SlurmSpec)
    """SLURM parameters."""
    signal_delay_s: int = Field(default=300, ge=10)
    """Seconds before the time limit that SLURM sends SIGUSR2 (save a checkpoint, then requeue); long enough to
    write a checkpoint to the shared file system (4B: about 50 GB of weights and optimizer state)."""
    requeue: bool = True
    """Submit with ``--requeue``, so SLURM requeues a preempted or failed-node job even where ``JobRequeue=0``."""
    dataset_array: bool = True
    """SLURM: build the launch's datasets in a CPU-only job array first (one task per dataset); the GPU arrays
    depend on it (``afterany``), so GPUs never wait on synthesis."""
    dataset_cpus: int = Field(default=4, ge=1)
    """CPUs per task of the dataset array."""
    dataset_mem_gb: float = Field(default=16.0, gt=0)
    """Memory per task of the dataset array, in GiB."""
    dataset_timeout_min: int = Field(default=120, ge=1)
    """Time limit per task of the dataset array, in minutes."""
    offline: bool = False
    """Compute nodes cannot reach the Hugging Face hub: every ``pretrained`` must be a local folder (``preflight``
    and ``launch`` refuse a hub id) and jobs run with ``HF_HUB_OFFLINE=1``."""
    storage_quota_gb: float | None = Field(default=None, gt=0)
    """Space the runs may use under ``folder``, in GB; ``preflight`` refuses a design whose storage estimate
    exceeds it (or the free space, when None)."""


class CostSpec(_Frozen):
    """Training compute as a cost in the budget unit (allocator/)."""

    per_pflop: float = Field(default=0.0, ge=0.0)
    """Cost of 1e15 training FLOPs in the budget unit; 0 ignores compute in allocations. Measure it on pilot
    runs with ``toolscale calibrate-cost`` (GPU-hours from ``sacct`` over measured FLOPs)."""
    tokens_per_task: float = Field(default=400.0, gt=0.0)
    """Average training tokens a synthesised task adds (for compute cost)."""
    gpu_hour_usd: float | None = Field(default=None, gt=0.0)
    """Price of one GPU-hour in usd: prices the GPU-seconds below (and ``calibrate-cost``'s per_pflop) when
    ``budget_unit = "usd"``; with ``gpu_hours`` a GPU-hour costs 1."""
    eval_gpu_s_per_run: float = Field(default=0.0, ge=0.0)
    """GPU-seconds the evaluation of one trained model takes (vLLM serve and score), in seconds; ``allocate``
    charges it once per plan (``calibrate-cost`` measures it)."""
    synth_gpu_s_per_task: float = Field(default=0.0, ge=0.0)
    """GPU-seconds a self-hosted synthesis LLM (``[synth.llm]`` on your vLLM) spends per task, in seconds; 0 when
    synthesis uses a paid API (whose price is in the task axis' cost_per_unit) or offline templates."""

    def gpu_hour_cost(self, gpu_hour_usd: float | None = None, unit: str = "usd") -> float | None:
        """One GPU-hour in the budget unit: 1 for ``gpu_hours``, else ``gpu_hour_usd`` (the argument wins)."""
        if unit == "gpu_hours":
            return 1.0
        return gpu_hour_usd if gpu_hour_usd is not None else self.gpu_hour_usd
