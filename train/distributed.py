"""Distributed training: one process per GPU (torch distributed), sharded bf16 weights, a global batch.

A multi-GPU rung runs ``gpus`` processes (SLURM ``--ntasks-per-node = gpus``, or ``torchrun``), each holding
one device; the HF ``Trainer`` picks the process group up from the environment (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``; ``slurm.job`` sets them from SLURM's). On CPUs the
same code path runs with the ``gloo`` backend, which is how the tests cover it.

What a run gets (:func:`parallel_settings`, the ``SFTConfig`` fields):

* **a global batch**: the rung's ``batch_size`` is the sequences per optimizer step over all processes;
  each process takes ``micro_batch_size`` per forward pass and gradients accumulate over
  ``batch_size / (world x micro)`` passes (:func:`accumulation`), so the loss curve does not depend on the
  number of GPUs;
* **sharding** (``train.parallel``): ``fsdp`` (FSDP2 full shard, ZeRO-3 like, bf16 mixed precision; on GPUs
  only, as accelerate has no FSDP for CPU processes, which run as DDP) or ``ddp`` (replicated weights);
* **activation checkpointing**, **TRL's chunked LM-head loss** (log-probabilities in chunks, never the full
  ``tokens x vocabulary`` logits) and **padding-free batches** (sequences concatenated with ``position_ids``,
  the attention kept block-diagonal) where ``[train]`` turns them on (default: on GPUs);
* **rank-0 guards**: :func:`is_main` gates every file a run writes besides the Trainer's own checkpoints,
  and :func:`save_final` gathers the weights and writes them once, in the configured dtype.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolscale.errors import UsageError

if TYPE_CHECKING:  # pragma: no cover
    from toolscale.config import ModelSize, TrainSpec

__all__ = ["DistEnv", "dist_env", "is_main", "accumulation", "parallel_settings", "barrier", "init_process_group",
           "save_final", "broadcast_flags", "release_devices"]


@dataclass(frozen=True)
class DistEnv:
    """The process's place in a torch-distributed job (``world_size`` 1 when not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def dist_env() -> DistEnv:
    """Rank, world size and local rank from the environment torchrun or ``slurm.job`` set."""
    def read(name: str, default: int) -> int:
        try:
            return int(os.environ.get(name, default))
        except ValueError:
            return default

    return DistEnv(rank=read("RANK", 0), world_size=max(1, read("WORLD_SIZE", 1)), local_rank=read("LOCAL_RANK", 0))


def is_main() -> bool:
    """True on global rank 0 (and in a single process): the one process that writes run files."""
    return dist_env().rank == 0


def accumulation(batch_size: int, world_size: int, micro_batch_size: int | None) -> tuple[int, int]:
    """``(micro batch per process, gradient accumulation steps)`` for a global batch of ``batch_size`` sequences.

    ``micro_batch_size`` None takes the whole share of each process in one pass. Raises
    :class:`~toolscale.errors.UsageError` when the global batch is not ``world x micro x steps``.

    Examples
    --------
    >>> accumulation(32, 4, 2)
    (2, 4)
    """
    if world_size < 1:
        raise UsageError(f"world size must be >= 1, got {world_size}")
    if batch_size % world_size:
        raise UsageError(f"batch_size {batch_size} is not divisible by the {world_size} training processes "
                         "(one per GPU); choose a global batch that is")
    share = batch_size // world_size
    micro = share if micro_batch_size is None else int(micro_batch_size)
    if micro < 1 or share % micro:
        raise UsageError(f"micro_batch_size {micro_batch_size} must divide the per-process share "
                         f"{share} = batch_size {batch_size} / {world_size} processes")
    return micro, share // micro


def parallel_settings(size: "ModelSize", train: "TrainSpec", *, gpu: bool, world_size: int) -> dict[str, Any]:
    """``SFTConfig`` fields of one run's parallel layout (see the module docstring); pure.

    Parameters
    ----------
    size : the rung (``batch_size`` is global; ``micro_batch_size`` per process and pass).
    train : ``[train]`` (``parallel``, ``activation_checkpointing``, ``chunked_loss``, ``padding_free``).
    gpu : whether the run trains on CUDA devices (bf16 mixed precision, NCCL) or CPUs (fp32, gloo).
    world_size : training processes.
    """
    micro, accum = accumulation(size.batch_size, world_size, size.micro_batch_size)
    ckpt = gpu if train.activation_checkpointing is None else train.activation_checkpointing
    out: dict[str, Any] = {"per_device_train_batch_size": micro, "gradient_accumulation_steps": accum,
                           "activation_checkpointing": bool(ckpt)}
    if ckpt:
        out["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    if train.padding_free if train.padding_free is not None else gpu:
        out.update(padding_free=True, max_length=None)  # rows are cut to max_seq_len when tokenized
    if world_size > 1:
        out["ddp_backend"] = "nccl" if gpu else "gloo"
        if train.parallel == "fsdp" and gpu:  # accelerate shards on devices only; CPUs run the DDP path
            out["fsdp"] = True  # FSDP2, each decoder layer wrapped; full shard = reshard after forward
            out["fsdp_config"] = {"version": 2, "reshard_after_forward": True,
                                  "state_dict_type": "SHARDED_STATE_DICT" if gpu else "FULL_STATE_DICT",
                                  "activation_checkpointing": bool(ckpt), "cpu_ram_efficient_loading": False}
            out["activation_checkpointing"] = False  # FSDP applies it (the Trainer's own would wrap twice)
            out.pop("gradient_checkpointing_kwargs", None)
        else:
            out["ddp_find_unused_parameters"] = False
    return out


def barrier() -> None:
    """Wait for every process of the group (no-op outside torch distributed)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def broadcast_flags(flags: list[bool]) -> list[bool]:
    """Each flag OR-ed over every process (one small all-reduce; the flags themselves outside distributed).

    Stop and save decisions must be the same on every rank, or a collective save would wait forever."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return list(flags)
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    t = torch.tensor([1.0 if f else 0.0 for f in flags], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return [bool(v > 0) for v in t.tolist()]


def save_final(trainer: Any, out_dir: str | Path, dtype: str | None) -> None:
    """Gather the trained weights (a collective under FSDP) and write them once, from rank 0, in ``dtype``
    (``"bfloat16"``, ``"float32"``, or None for the training dtype); ``config.json`` records the dtype."""
    import torch

    acc = trainer.accelerator
    state = acc.get_state_dict(trainer.model)
    if acc.is_main_process:
        model = acc.unwrap_model(trainer.model)
        target = getattr(torch, dtype) if dtype else None
        if target is not None:
            state = {k: v.to(target) if v.is_floating_point() else v for k, v in state.items()}
        model.save_pretrained(out_dir, state_dict=state)
        if target is not None:  # save_pretrained records the in-memory parameters' dtype: write the saved one
            before, model.config.dtype = model.config.dtype, dtype
            model.config.save_pretrained(out_dir)
            model.config.dtype = before
    acc.wait_for_everyone()


def init_process_group() -> DistEnv:
    """Join the job's process group now (before any rank-0 guard), through accelerate's shared state that the
    Trainer reuses: NCCL on GPUs, gloo on CPUs. A single process does nothing. Returns :func:`dist_env`."""
    env = dist_env()
    if env.distributed:
        import torch
        from accelerate import PartialState

        gpu = torch.cuda.is_available()
        PartialState(cpu=not gpu, backend="nccl" if gpu else "gloo")
    return env


def release_devices() -> None:
    """After the last training stage: leave the process group and return cached GPU memory, so that the
    evaluation that follows (a vLLM server on the same GPUs) finds them free. Outside distributed, on CPUs,
    nothing to do."""
    import gc

    import torch
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    if torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()
