"""Contracts of the run registry: planned runs, stored runs, metrics and result files.

Imports only pydantic and the standard library. A compute job writes exactly one
:class:`RunResult` file; the registry ingests it (jobs never open the registry).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RunStatus",
    "Split",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "RunSpec",
    "RunRecord",
    "MetricResult",
    "TrainStats",
    "RunResult",
    "run_id_for",
    "TableCheck",
    "RegistryCheck",
]

RunStatus = Literal["pending", "submitted", "running", "done", "failed", "cancelled"]
Split = Literal["fit", "heldout"]
RUN_STATUSES: tuple[str, ...] = ("pending", "submitted", "running", "done", "failed", "cancelled")
TERMINAL_STATUSES: frozenset[str] = frozenset({"done", "failed", "cancelled"})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


def run_id_for(experiment: str, design_version: str, recipe: dict[str, float], model_size: str,
               seed: int, token_multiplier: float = 1.0) -> str:
    """Deterministic run id: the same planned run always gets the same id (idempotent designs)."""
    key = json.dumps([experiment, design_version, sorted(recipe.items()), model_size, seed, token_multiplier])
    return "r-" + hashlib.sha256(key.encode()).hexdigest()[:16]


class RunSpec(_Frozen):
    """One planned training run: a data recipe x a model size x a seed."""

    run_id: str
    """Deterministic id (see :func:`run_id_for`)."""
    experiment: str
    """Experiment name."""
    design_version: str
    """Hash of the config that produced the design; runs of two versions never mix."""
    recipe: dict[str, float]
    """Real level of every data axis, keyed by axis name (in each axis' unit)."""
    model_size: str
    """Ladder rung name."""
    model_params: float | None = None
    """Parameters N of the rung (planned; measured value replaces it on ingest)."""
    train_tokens: float | None = None
    """Planned training tokens D."""
    train_flops: float | None = None
    """Planned training FLOPs, 6 N D."""
    token_multiplier: float = 1.0
    """Training-token multiple of the recipe's dataset."""
    seed: int = 0
    """Seed of synthesis and training."""
    split: Split = "fit"
    """Whether the fit sees this run (``fit``) or it checks extrapolation (``heldout``)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else (design point index, center point flag, import columns)."""


class RunRecord(_Frozen):
    """A run as stored in the registry, with its metrics."""

    run_id: str
    """Run id."""
    experiment: str
    """Experiment name."""
    design_version: str
    """Design version."""
    recipe: dict[str, float]
    """Axis levels."""
    model_size: str
    """Ladder rung (or the imported size label)."""
    model_params: float | None
    """Parameters N."""
    train_tokens: float | None
    """Training tokens D."""
    train_flops: float | None
    """Training FLOPs."""
    seed: int
    """Seed."""
    status: RunStatus
    """State."""
    attempts: int
    """Submissions so far."""
    job_id: str | None
    """Scheduler job id of the last attempt."""
    split: Split
    """fit or heldout."""
    error: str | None
    """Tail of the last failure's traceback."""
    source: str
    """``design``, ``import`` or ``simulated``."""
    metadata: dict[str, Any]
    """Run metadata."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """``"benchmark/metric" -> score`` for every stored metric."""
    created_at: datetime | None = None
    """When the run was planned."""
    finished_at: datetime | None = None
    """When the run finished."""


class MetricResult(_Frozen):
    """One benchmark score of one run."""

    benchmark: str
    """Benchmark name (eval's registry, or an imported name)."""
    metric: str = "score"
    """Which number: ``score`` (the benchmark's headline), or a continuous one (``loss``, ``call_logprob``...)."""
    version: str = "1"
    """Benchmark version."""
    score: float
    """The value."""
    stderr: float | None = None
    """Standard error of the value."""
    n_items: int | None = None
    """Items scored."""
    higher_is_better: bool = True
    """Direction of the metric."""


class TrainStats(_Frozen):
    """Accounting of a training run (train/)."""

    params: float
    """Parameters N, embeddings included."""
    params_nonembedding: float | None = None
    """Parameters without embeddings."""
    train_tokens: float
    """Tokens seen in training, D."""
    train_flops: float
    """6 N D training FLOPs."""
    wall_s: float | None = None
    """Training wall time in seconds."""
    final_loss: float | None = None
    """Last training loss."""
    steps: int | None = None
    """Optimizer steps."""


class RunResult(_Frozen):
    """The one file a job writes (``<run_id>.result.json``), atomically."""

    run_id: str
    """Run id."""
    experiment: str
    """Experiment name."""
    status: Literal["done", "failed"]
    """Outcome."""
    metrics: list[MetricResult] = Field(default_factory=list)
    """Benchmark scores (done runs)."""
    train: TrainStats | None = None
    """Training accounting (done runs)."""
    dataset_id: str | None = None
    """Content hash of the dataset trained on."""
    error: str | None = None
    """Tail of the traceback (failed runs)."""
    job_id: str | None = None
    """Scheduler job id."""
    finished_at: datetime
    """When the job finished (UTC)."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Anything else the job measured (loss curve, probe summary)."""


class TableCheck(_Frozen):
    """One table of a registry read end to end by ``toolscale registry check``."""

    table: str
    """Table name."""
    rows: int | None
    """Rows read (None when the table could not be read)."""
    ok: bool
    """True when every row was read without an I/O or checksum error."""
    error: str = ""
    """DuckDB's first error line for this table (empty when ok)."""


class RegistryCheck(_Frozen):
    """The result of reading every table of a registry file, so DuckDB verifies each block's checksum."""

    path: str
    """The registry file checked."""
    size_bytes: int
    """Its size on disk (bytes)."""
    schema_version: int | None
    """Schema version stored in the file (None when unreadable)."""
    tables: list[TableCheck] = Field(default_factory=list)
    """Every table, in name order."""
    ok: bool
    """True when the file opened and every table read cleanly."""
    error: str = ""
    """Why the file could not be opened at all (empty otherwise)."""
