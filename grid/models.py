"""Contracts of the run registry: planned runs, stored runs, metrics and result files.

Imports only pydantic and the standard library. A compute job writes exactly one
:class:`RunResult` file; the registry ingests it (jobs never open the registry).

:class:`DesignSummary` is what ``grid design --json`` prints (with the alias report) and what
the registry stores with each design version.

The registry's reads return these models (:class:`RunRecord`, :class:`ExperimentRecord`,
:class:`DatasetRecord`, :class:`FitRecord`) and its ingest an :class:`IngestReport`;
wherever one is shown as JSON (``--json``, MCP), the JSON is its ``model_dump(mode="json")``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AUGMENT_KIND",
    "AugmentReport",
    "RunStatus",
    "Split",
    "RUN_STATUSES",
    "TERMINAL_STATUSES",
    "RunSpec",
    "RunRecord",
    "MetricResult",
    "TrainStats",
    "RunResult",
    "RunProbe",
    "RunOutcome",
    "IngestReport",
    "ExperimentRecord",
    "DatasetRecord",
    "FitRecord",
    "Cell",
    "EstimatedCost",
    "StorageEstimate",
    "DesignSummary",
    "DesignRecorded",
    "run_id_for",
    "TableCheck",
    "RegistryCheck",
    "Conflict",
    "ImportReport",
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
    """Planned training FLOPs, attention and the unembedding counted (``metadata.flops_6nd``: 6 N D)."""
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
    stderrs: dict[str, float] = Field(default_factory=dict)
    """``"benchmark/metric" -> standard error`` of the metrics stored with one (``import-runs --weight``)."""
    """``"benchmark/metric" -> score`` for every stored metric of the run itself (its final model)."""
    checkpoints: dict[int, dict[str, float]] = Field(default_factory=dict)
    """Scored checkpoints: optimizer step -> ``"benchmark/metric" -> score`` (``train/tokens`` is the tokens seen
    by that step); empty for runs scored only at the end."""
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
    step: int | None = None
    """The optimizer step of the checkpoint scored (checkpoints as data); None: the run's own value (its final
    model)."""


class TrainStats(_Frozen):
    """Accounting of a training run (train/)."""

    params: float
    """Parameters N, embeddings included."""
    params_nonembedding: float | None = None
    """Parameters without embeddings."""
    train_tokens: float
    """Tokens seen in training, D."""
    train_flops: float
    """Training FLOPs: ``6 D (N + L n_ctx d + V d)`` for a proxy model built from config (attention and the
    unembedding counted, :func:`toolscale.config.model_flops`), ``6 N D`` otherwise."""
    train_flops_6nd: float | None = None
    """``6 N D`` with N the non-embedding parameters (the published convention), beside the full count."""
    wall_s: float | None = None
    """Training wall time in seconds."""
    final_loss: float | None = None
    """Last training loss."""
    steps: int | None = None
    """Optimizer steps."""
    stage_flops: dict[str, float] = Field(default_factory=dict)
    """Training FLOPs per stage (``midtrain``, ``sft``, ``grpo``) when a run has several; they sum to
    ``train_flops``."""


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


class RunProbe(_Frozen):
    """The probe figures a pipeline run keeps of its dataset (``metadata.probe``), taken from the manifest's
    ``probe`` section (:class:`probes.models.ProbeSummary`, which holds more); every field None when absent."""

    model_config = ConfigDict(strict=True)

    measured_groundedness: float | None = None
    """Share of the scored actions the calibrated probe judges grounded, in [0, 1]."""
    symbolic_groundedness: float | None = None
    """Share of actions derivable by symbolic provenance, in [0, 1]."""
    coverage: float | None = None
    """Compositional coverage score, in [0, 1]."""
    agreement: float | None = None
    """Probe agreement with synth's injected labels on the evaluation split, in [0, 1]."""
    probe_reliable: bool | None = None
    """True when the calibrated probe beats a constant verdict on its evaluation split."""
    kind: str | None = None
    """Probe kind (``copy``, ``lm``, ``hf:MODEL_DIR``)."""
    balanced_accuracy: float | None = None
    """Balanced accuracy of the calibrated probe on its evaluation split, in [0, 1]."""
    probe_flops: float | None = None
    """FLOPs the probe spent (``cost.total_flops``)."""
    probe_cost_share: float | None = None
    """``probe_flops`` / the run's training FLOPs."""


class RunOutcome(_Frozen):
    """What the ``pipeline`` job kind returns (:mod:`slurm.jobs`); :mod:`slurm.job` turns it into a
    :class:`RunResult`."""

    metrics: list[MetricResult] = Field(default_factory=list)
    """Benchmark scores (empty on ranks other than 0)."""
    train: TrainStats | None = None
    """Training accounting."""
    dataset_id: str | None = None
    """Content hash of the dataset trained on."""
    probe: RunProbe | None = None
    """The dataset's probe figures, stored as ``extra["probe"]``."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Anything else the job measured (a ``"probe"`` key here is replaced by ``probe`` when that is set)."""

    def result_extra(self) -> dict[str, Any]:
        """``RunResult.extra``: ``extra``, with ``probe`` as JSON under ``"probe"`` when it is set."""
        if self.probe is None:
            return dict(self.extra)
        return {**self.extra, "probe": self.probe.model_dump(mode="json")}


class IngestReport(_Frozen):
    """Outcome of ingesting result files into the registry (one transaction)."""

    ingested: int = 0
    """Result files applied to their runs."""
    duplicate: int = 0
    """Result files skipped because a file with the same content hash was ingested before."""
    unknown_run: int = 0
    """Result files skipped because the registry has no run with their run id."""
    problems: list[str] = Field(default_factory=list)
    """One line per skipped file: ``"<path>: unknown run <run_id>"``, or a conflict skipped (``on_conflict="skip"``)."""
    conflicts: int = 0
    """Stored values (a score, or a done run's status) that a result differs from: applied only with ``--update``
    (old values to ``run_history``), else refused (``ingest``) or skipped and listed (``sync``)."""
    updated_runs: int = 0
    """Runs whose stored values were changed (``--update``)."""
    stale_fits: int = 0
    """Fits marked stale because values of their experiment changed."""
    conflict_examples: list["Conflict"] = Field(default_factory=list)
    """The first few conflicts."""


class ExperimentRecord(_Frozen):
    """An experiment as stored in the registry."""

    name: str
    """Experiment name (unique)."""
    axes: list[str]
    """Data axes, in the order they were declared."""
    simulated: bool
    """True when any of its runs were simulated, not trained."""
    config: dict[str, Any] | None
    """The experiment config as JSON (``ExperimentConfig.model_dump(mode="json")``), or None for imported runs."""


class DatasetRecord(_Frozen):
    """A synthesized dataset's manifest as stored in the registry (written by synth/ and probes/)."""

    dataset_id: str
    """Content-derived dataset id."""
    experiment: str | None
    """Experiment the dataset was made for, or None."""
    recipe: dict[str, Any]
    """The recipe it was synthesized from (axis name -> level, plus recipe options)."""
    seed: int
    """Seed of synthesis."""
    path: str
    """Folder holding the dataset's files."""
    manifest: dict[str, Any]
    """The dataset's manifest (counts, provenance, probe results...) as JSON."""


class FitRecord(_Frozen):
    """A fitted scaling law as stored in the registry."""

    fit_id: str
    """Fit id (``f-`` and 12 hex digits)."""
    experiment: str
    """Experiment whose runs were fitted."""
    benchmark: str
    """Benchmark whose scores were fitted."""
    metric: str
    """Metric of the benchmark."""
    law: str
    """Registered law name."""
    converged: bool
    """Whether the optimiser converged."""
    n_points: int
    """Runs (points) the law was fitted on."""
    data_hash: str
    """Hash of the fitted points: the same data gives the same hash."""
    payload: dict[str, Any]
    """The ``FitResult`` as JSON (``FitResult.model_validate(payload)`` reads it back)."""
    created_at: datetime
    """When the fit was stored (UTC, no tzinfo)."""
    stale_reason: str | None = None
    """Why the fit no longer matches its experiment's data (its runs changed after it was made), or None when
    current. ``allocate`` and ``predict`` refuse a stale fit; ``toolscale fit`` makes a current one."""


class Cell(_Frozen):
    """One (rung, token multiplier) cell of the crossing: every run in it has the same planned FLOPs."""

    model_size: str
    """Ladder rung."""
    token_multiplier: float
    """Multiple of the rung's planned tokens."""
    model_params: float
    """Planned parameters N (``ModelSize.approx_params``)."""
    max_steps: int
    """Optimizer steps a run trains: ``ceil(rung max_steps x token_multiplier)``."""
    train_tokens: float
    """Planned tokens D = max_steps x batch_size x max_seq_len."""
    train_flops: float
    """Planned training FLOPs, attention and the unembedding counted."""
    runs: int
    """Runs in this cell."""
    split: str
    """``fit``, ``heldout`` or ``mixed``."""


class EstimatedCost(_Frozen):
    """What a design costs before anything runs, in the experiment's budget unit."""

    unit: str
    """Budget unit (``usd`` or ``gpu_hours``)."""
    data: float
    """Synthesis: sum over distinct (recipe, seed) datasets of each axis' spend under :class:`CostModel`
    (``cost_per_unit x (level - quality baseline) x level of cost_scales_with``)."""
    compute: float
    """Training: ``cost.per_pflop x planned FLOPs / 1e15`` summed over runs."""
    total: float
    """``data + compute``."""


class StorageEstimate(_Frozen):
    """Disk a design's runs need under ``executor.folder`` (GB = 1e9 bytes), before anything runs.

    Per parameter: a saved model takes 2 bytes (bf16, pretrained rungs by default) or 4 (fp32); a training
    checkpoint 12 (fp32 weights and Adam's two moments). Datasets: ``task_count x cost.tokens_per_task``
    tokens at about 8 bytes each on disk (JSONL with tool schemas).
    """

    final_models_gb: float
    """Every run's final model, kept after the run."""
    checkpoints_gb: float
    """Checkpoints on disk at once: one per running run (``max_parallel`` per rung array) when
    ``train.keep_checkpoints`` is false (they are deleted after success), else one per run."""
    datasets_gb: float
    """The distinct synthesised datasets."""
    total_gb: float
    """The sum: what ``preflight`` compares with the quota (or the free space)."""
    per_run_gb: dict[str, float]
    """Model size -> one run's final model plus its checkpoint while it trains."""
    keep_checkpoints: bool
    """Whether checkpoints stay after success (``train.keep_checkpoints``)."""


class DesignSummary(_Frozen):
    """What a built design holds and can estimate; ``grid design --json`` prints its ``model_dump(mode="json")``."""

    experiment: str
    """Experiment name."""
    design_version: str
    """Design version (``d-`` + 12 hex digits)."""
    kind: str
    """Design kind (``fractional``, ``gsd``, ``full``, ``lhs``)."""
    runs: int
    """Planned runs."""
    points: int
    """Design points, center points included."""
    center_points: int
    """Center points."""
    replicates: int
    """Seeds per point."""
    datasets: int
    """Distinct (recipe, seed) datasets the runs need."""
    levels: dict[str, list[float]]
    """Real levels used per axis, ascending, in each axis' unit."""
    level_counts: dict[str, int]
    """Number of distinct levels per axis."""
    units: dict[str, str]
    """Unit of each axis."""
    resolution: int | None
    """Resolution of a regular two-level fraction, else None."""
    resolution_roman: str | None
    """The resolution in Roman numerals (``IV``), else None."""
    generators: str | None
    """Generators of a two-level fraction (``a b c -abc``), else None."""
    gsd_reduction: int | None
    """Reduction of a generalized subset design, else None."""
    d_efficiency: float
    """D-efficiency of the main-effects model on the design, in [0, 1]."""
    alias_highlights: list[str]
    """The first (at most 12) alias statements worth reading."""
    qd_clear_of_main: bool
    """True when quality x diversity interactions are not aliased with main effects."""
    qd_statement: str
    """One sentence on what the design can say about quality x diversity interactions."""
    split_rule: str
    """The held-out rule, e.g. ``top 25% of runs by planned training FLOPs``."""
    fit_runs: int
    """Runs the fit sees."""
    heldout_runs: int
    """Runs held out to check extrapolation."""
    fitted_sizes: int = 0
    """Distinct model sizes among the fitted runs (``fit --law auto`` cross-validates one rung up from 3)."""
    ladder_statement: str = ""
    """One sentence on what the fitted sizes let the fit check (see :func:`grid.design.ladder_statement`)."""
    heldout_share: float
    """``heldout_runs / runs`` (rounded to 6 digits)."""
    extrapolation_factor: float | None
    """Largest held-out FLOPs / largest fitted FLOPs, attention and the unembedding counted (rounded to 6
    digits); None with nothing held out."""
    extrapolation_factor_6nd: float | None = None
    """The same in ``6 N D`` (the published convention, which undercounts small models)."""
    min_extrapolation_factor: float
    """The factor the config requires."""
    flops_range: list[float] | None
    """``[min, max]`` planned training FLOPs over the runs; None for an empty design."""
    cells: list[Cell]
    """The (rung, token multiplier) cells, in ladder order."""
    constrained_points: int
    """Points moved by the design constraints."""
    duplicate_runs_dropped: int
    """Runs dropped because another run had the same id (points that constraints made equal)."""
    estimated_cost: EstimatedCost
    """Data, compute and total cost before anything runs."""
    storage: StorageEstimate | None = None
    """Disk the runs need (final models, checkpoints, datasets), see :func:`grid.storage.storage_estimate`."""


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


class DesignRecorded(_Frozen):
    """What recording a design in the registry changed (:func:`grid.planner.record_design`)."""

    design_version: str
    """The design's version."""
    new_design: bool
    """False when this version was recorded before."""
    new_runs: int
    """Runs inserted as ``pending``."""
    existing_runs: int
    """Runs of the design already in the registry (left as they were)."""
    other_versions: list[str]
    """Other design versions the experiment holds (only with ``new_version``)."""


AUGMENT_KIND = "augment"
"""``kind`` of the design record of a group added by ``grid design --augment`` (and the runs' ``source``)."""


class AugmentReport(_Frozen):
    """``toolscale grid design --augment NEXT.json``: the proposed runs added as a group of their own."""

    experiment: str
    """Experiment the runs join."""
    group: str
    """The group's design version (``next-`` + 12 hex digits of the proposal's rows)."""
    runs: list[RunSpec]
    """The group's runs (pending, fitted)."""
    new_group: bool
    """False when this group was recorded before."""
    new_runs: int
    """Runs inserted as ``pending`` (0 on a dry run or when added before)."""
    dry_run: bool
    """True when nothing was written."""
    total_cost: float
    """What the proposal said the runs cost, in ``unit``."""
    unit: str
    """Budget unit."""


class Conflict(_Frozen):
    """A stored value that an import or simulation would overwrite."""

    run_id: str
    """The run."""
    column: str
    """Run column, axis name, or ``benchmark/metric`` for a score."""
    old: str | None
    """Stored value, as text (None when NULL)."""
    new: str | None
    """Incoming value, as text (None when NULL)."""


class ImportReport(_Frozen):
    """Outcome of storing imported or simulated runs (``import-runs --json``)."""

    experiment: str
    """Experiment written to."""
    rows: int
    """Rows (runs) in the incoming table."""
    new_runs: int
    """Runs that were not stored before."""
    new_metrics: int = 0
    """Metric values that were not stored before (new runs' included)."""
    updated_runs: int = 0
    """Stored runs whose values were changed (``--update`` / ``--replace``; old values in ``run_history``)."""
    conflicts: int = 0
    """Stored values that differed from the incoming ones (applied only with ``--update`` / ``--replace``)."""
    conflict_examples: list[Conflict] = Field(default_factory=list)
    """The first few conflicts."""
    heldout: int = 0
    """Incoming runs in the held-out split."""
    axes: list[str] = Field(default_factory=list)
    """Data axes of the incoming runs."""
    stale_fits: int = 0
    """Stored fits of the experiment marked stale because its data changed."""
    read_s: float = 0.0
    """Seconds spent reading and validating the file (no lock held), 0 for in-memory runs."""
    lock_s: float = 0.0
    """Seconds the registry's write transaction took (the write lock is held from open to close)."""
    notes: list[str] = Field(default_factory=list)
    """What the import did to the table that the user should know (rows filtered, checkpoints kept, sizes that
    are only labels)."""
