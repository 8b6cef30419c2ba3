"""How much disk a design's runs need (pure): final models, checkpoints alive at once, datasets.

On a cluster the storage, not the GPUs, is often what runs out first: a 4B run's checkpoint (fp32 weights and
Adam state) is about 48 GB. :func:`storage_estimate` gives the numbers ``grid design`` prints and ``preflight``
checks against the quota, from the config and the planned runs alone.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from grid.models import RunSpec, StorageEstimate
from toolscale.config import ExperimentConfig, ModelSize

__all__ = ["storage_estimate", "final_bytes_per_param", "CHECKPOINT_BYTES_PER_PARAM", "DATASET_BYTES_PER_TOKEN"]

CHECKPOINT_BYTES_PER_PARAM = 12.0
"""fp32 weights (4) and Adam's first and second moments (4 + 4) per parameter."""
DATASET_BYTES_PER_TOKEN = 8.0
"""Bytes of a synthesised dataset on disk per training token (JSONL rows with tool schemas and metadata)."""


def final_bytes_per_param(size: ModelSize, save_dtype: str) -> float:
    """Bytes per parameter of a saved final model: 2 in bf16 (``auto`` for pretrained rungs), else 4."""
    bf16 = save_dtype == "bfloat16" or (save_dtype == "auto" and size.pretrained is not None)
    return 2.0 if bf16 else 4.0


def storage_estimate(config: ExperimentConfig, runs: Sequence[RunSpec]) -> StorageEstimate:
    """Disk the runs need under ``executor.folder`` (see :class:`grid.models.StorageEstimate`), in GB."""
    sizes = {s.name: s for s in config.ladder}
    count = Counter(r.model_size for r in runs if r.model_size in sizes)
    keep = config.train.keep_checkpoints
    final = ckpt = 0.0
    per_run: dict[str, float] = {}
    for name, n in count.items():
        size = sizes[name]
        model = size.approx_params * final_bytes_per_param(size, config.train.save_dtype)
        state = size.approx_params * CHECKPOINT_BYTES_PER_PARAM if config.train.save_checkpoints else 0.0
        final += n * model
        ckpt += (n if keep else min(n, config.executor.max_parallel)) * state
        per_run[name] = round((model + state) / 1e9, 3)
    datasets = {(json.dumps(r.recipe, sort_keys=True), r.seed): r.recipe.get("task_count", 0.0) for r in runs}
    data = sum(float(t) for t in datasets.values()) * config.cost.tokens_per_task * DATASET_BYTES_PER_TOKEN
    gb = lambda b: round(b / 1e9, 3)  # noqa: E731
    return StorageEstimate(final_models_gb=gb(final), checkpoints_gb=gb(ckpt), datasets_gb=gb(data),
                           total_gb=gb(final + ckpt + data), per_run_gb=per_run, keep_checkpoints=keep)
