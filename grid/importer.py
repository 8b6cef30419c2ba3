"""Bring your own runs: a CSV or Parquet table of results -> registry runs and metrics.

``parse_column_map`` and ``rows_to_runs`` are pure (table in, runs out) and check
everything before anything is written; ``read_table`` is the file edge.

Map targets (:data:`FIXED_TARGETS`): ``run_id`` (kept verbatim as the run's id), ``model_size`` (a parameter
count N, ``70M`` or ``2.8B`` included, or a label), ``model_params``, ``train_tokens`` (D), ``train_flops`` (C),
``score`` (higher is better), ``loss`` (lower is better), ``benchmark`` (a long table: one row per run and
task), ``seed``, ``split`` (``fit`` or ``heldout``: overrides the top-FLOPs rule), ``step`` (rows sharing a
run are checkpoints of it), ``unique_tokens`` (U of a data-constrained run), and the axes: a config's, or
those declared with ``--axis NAME``. Any other target is refused, naming the known ones: a mistyped target
never becomes a new scaling axis. Columns named exactly like a config axis map themselves
(:func:`self_mapped`). Missing D or C is derived with C = 6 N D. An empty or ``NaN`` metric cell is a missing
value: the run is imported without that metric (``fit`` skips it and says how many). Unmapped columns are
kept as run metadata.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grid.errors import TableImportError
from grid.models import MetricResult, RunSpec
from grid.split import heldout_mask
from toolscale.config import DOMAIN_KNOBS, FLOPS_PER_PARAM_TOKEN, training_flops

__all__ = ["FIXED_TARGETS", "SPLITS", "MAX_ABS_METRIC", "POSITIVE_TARGETS", "parse_column_map", "read_table",
           "rows_to_runs", "self_mapped", "check_metric_mapped", "parse_count", "SUFFIXES", "KNOWN_AXES", "PRESET_AXES", "check_axis_names"]

FIXED_TARGETS = ("run_id", "model_size", "model_params", "train_tokens", "train_flops", "score", "loss",
                 "benchmark", "seed", "split", "step")
KNOWN_AXES = ("unique_tokens",)
"""Axis targets every import knows (U of a data-constrained run, read by the repetition laws)."""
PRESET_AXES = tuple(dict.fromkeys(a for knobs in DOMAIN_KNOBS.values() for a in knobs))
"""The presets' data axes, every domain's (tools, code): known targets of an import without a config."""
SPLITS = ("fit", "heldout")
"""Values of a mapped ``split`` column (it overrides the top-FLOPs rule)."""
_AXIS = re.compile(r"^[a-z][a-z0-9_]*$")


def check_axis_names(names: Sequence[str]) -> list[str]:
    """``--axis NAME`` values: snake_case and not a field name; TableImportError naming the bad one."""
    for name in names:
        if not _AXIS.match(name) or name in FIXED_TARGETS:
            raise TableImportError(f"--axis {name!r} must be a snake_case name that is not a field "
                                   f"({', '.join(FIXED_TARGETS)})")
    return list(names)


def parse_column_map(items: Sequence[str], axes: Sequence[str] | None = None, *,
                     require_metric: bool = True, extra_axes: Sequence[str] = ()) -> dict[str, str]:
    """``["Model Size=model_size", ...]`` -> ``{target: column}``.

    A target is a field (:data:`FIXED_TARGETS`), ``unique_tokens``, an axis of ``axes`` (a config's; without
    one, the default preset's :data:`PRESET_AXES`) or of ``extra_axes`` (``--axis NAME``); anything else is refused with the list of targets (a mistyped target
    never becomes a new axis). ``require_metric=False`` defers the check that a score or loss is mapped
    (:func:`check_metric_mapped`).
    """
    known_axes = [*KNOWN_AXES, *(PRESET_AXES if axes is None else axes), *check_axis_names(extra_axes)]
    mapping: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise TableImportError(f"--map must be COLUMN=FIELD, got {item!r}")
        column, target = (s.strip() for s in item.rsplit("=", 1))
        if not column or not target:
            raise TableImportError(f"--map must be COLUMN=FIELD, got {item!r}")
        if target not in FIXED_TARGETS and target not in known_axes:
            raise TableImportError(_unknown_target(target, known_axes))
        if target in mapping:
            raise TableImportError(f"--map target {target!r} is mapped twice")
        mapping[target] = column
    if require_metric:
        check_metric_mapped(mapping)
    return mapping


def _unknown_target(target: str, axes: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(target, [*FIXED_TARGETS, *axes], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"--map target {target!r} is unknown{hint}; targets: {', '.join(FIXED_TARGETS)}, axes: "
            f"{', '.join(axes)}; a new axis needs --axis {target} (or the config's [[axes]]); a stderr column "
            "goes to --weight")


def check_metric_mapped(mapping: dict[str, str]) -> None:
    """TableImportError unless a column maps to ``score`` or ``loss``."""
    if "score" not in mapping and "loss" not in mapping:
        raise TableImportError("--map must map a column to score (higher is better) or loss (lower is better)")


def self_mapped(mapping: dict[str, str], columns: Sequence[str], axes: Sequence[str]) -> dict[str, str]:
    """``mapping`` plus every config axis that names a column exactly and is not mapped yet."""
    used = set(mapping.values())
    extra = {a: a for a in axes if a in columns and a not in mapping and a not in used}
    return {**mapping, **extra}


def _missing(value: Any) -> bool:
    """An empty cell: None, NaN, or blank, ``NaN``, ``null`` or ``none`` text."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        (isinstance(value, str) and value.strip().lower() in ("", "nan", "null", "none"))


SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
"""Size suffixes of counts (parameters, tokens, FLOPs, axis levels): ``70M`` is 7e7, ``2.8B`` 2.8e9 (``G`` = ``B``)."""
_SIZED = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)$")


def parse_count(value: Any) -> float:
    """A count such as ``1.4e9``, ``70M``, ``2.8B`` or ``1.4T`` as a float; ValueError when it is none
    (the message names a suffix that is not K, M, B, G or T)."""
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    m = _SIZED.match(text)
    if m:
        if m.group(2).upper() not in SUFFIXES:
            raise ValueError(f"cannot parse the size suffix of {text!r} (a number, or one ending in K, M, B or T)")
        return float(m.group(1)) * SUFFIXES[m.group(2).upper()]
    return float(text)


def read_table(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``.csv`` or ``.parquet`` file as dicts; TableImportError for unreadable or empty files."""
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        raise TableImportError(f"{p} is a folder; give a .csv or .parquet file (a folder of lm-eval results: "
                               "--from lm-eval)")
    if not p.is_file():
        raise TableImportError(f"file not found: {p}")
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            frame = pd.read_csv(p, keep_default_na=False)  # "n/a" stays text, reported by name
        elif suffix in (".parquet", ".pq"):
            frame = pd.read_parquet(p)
        else:
            raise TableImportError(f"{p}: expected a .csv or .parquet file, got {suffix or 'no extension'}")
    except pd.errors.EmptyDataError:
        raise TableImportError(f"{p}: the file is empty") from None
    except (ValueError, OSError) as err:
        raise TableImportError(f"{p}: cannot read: {str(err).splitlines()[0]}") from None
    if frame.empty:
        raise TableImportError(f"{p}: the file has a header but no rows")
    return frame.to_dict(orient="records")


MAX_ABS_METRIC = 1e12
"""Largest metric magnitude accepted: beyond it a value is a unit or parsing error, and its square (the fit's
residuals) would overflow long before ``1e308``."""
POSITIVE_TARGETS = ("model_params", "train_tokens", "train_flops")
"""Fields that must be finite and > 0: a model has parameters, training sees tokens and costs FLOPs."""


def _number(row: dict[str, Any], column: str, line: int, target: str) -> float:
    value = row[column]
    try:
        x = float(value) if target in ("score", "loss") else parse_count(value)
    except ValueError as err:
        why = str(err) if "suffix" in str(err) else f"must be a number, got {value!r}"
        raise TableImportError(f"row {line}: column {column!r} ({target}) {why}") from None
    except TypeError:
        raise TableImportError(f"row {line}: column {column!r} ({target}) must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise TableImportError(f"row {line}: column {column!r} ({target}) must be finite, got {value!r}")
    if target in POSITIVE_TARGETS and x <= 0:
        raise TableImportError(f"row {line}: column {column!r} ({target}) must be > 0, got {value!r}")
    if target in ("score", "loss") and abs(x) > MAX_ABS_METRIC:
        raise TableImportError(f"row {line}: column {column!r} ({target}) must be within +-{MAX_ABS_METRIC:g}, "
                               f"got {value!r}")
    return x


def rows_to_runs(rows: Sequence[dict[str, Any]], mapping: dict[str, str], *, experiment: str,
                 benchmark: str | None = None, heldout_fraction: float = 0.25,
                 score_range: tuple[float, float] | None = None
                 ) -> tuple[list[str], list[RunSpec], list[list[MetricResult]]]:
    """Validate every row and build runs with their metrics; returns ``(axes, runs, metrics)``.

    Rows are numbered from 2 (the header is line 1), as a spreadsheet shows them. ``score_range``
    (``(0, 1)`` for the registered benchmarks, whose headline score is a share) bounds the ``score`` column.
    Sizes, tokens and FLOPs must be finite and positive, ``C = 6 N D`` included when it is derived.
    """
    if not rows:
        raise TableImportError("the table has no rows")
    columns = list(rows[0].keys())
    missing = [c for c in mapping.values() if c not in columns]
    if missing:
        raise TableImportError(f"column {missing[0]!r} not in the file; columns: {', '.join(map(str, columns))}")
    if benchmark is None and "benchmark" not in mapping:
        raise TableImportError("name the benchmark: --benchmark NAME, or --map COLUMN=benchmark")
    axes = [t for t in mapping if t not in FIXED_TARGETS]
    used = set(mapping.values())
    runs: list[RunSpec] = []
    metrics: list[list[MetricResult]] = []
    flops: list[float] = []
    splits: list[str] = []
    for i, row in enumerate(rows):
        line = i + 2
        recipe = {a: _number(row, mapping[a], line, a) for a in axes}
        size_raw = row[mapping["model_size"]] if "model_size" in mapping else None
        params, tokens, c = _size_tokens_flops(row, mapping, line, size_raw)
        seed = int(_number(row, mapping["seed"], line, "seed")) if "seed" in mapping else 0
        bench = str(row[mapping["benchmark"]]) if "benchmark" in mapping else benchmark
        ms = []
        if "score" in mapping and not _missing(row[mapping["score"]]):
            score = _number(row, mapping["score"], line, "score")
            if score_range is not None and not score_range[0] <= score <= score_range[1]:
                raise TableImportError(f"row {line}: column {mapping['score']!r} (score) of benchmark {bench!r} must be "
                                       f"in [{score_range[0]:g}, {score_range[1]:g}], got {row[mapping['score']]!r}")
            ms.append(MetricResult(benchmark=bench, metric="score", score=score, higher_is_better=True))
        if "loss" in mapping and not _missing(row[mapping["loss"]]):
            ms.append(MetricResult(benchmark=bench, metric="loss", score=_number(row, mapping["loss"], line, "loss"),
                                   higher_is_better=False))
        if "split" in mapping:
            value = str(row[mapping["split"]]).strip()
            if value not in SPLITS:
                raise TableImportError(f"row {line}: column {mapping['split']!r} (split) must be fit or heldout, "
                                       f"got {row[mapping['split']]!r}")
            splits.append(value)
        meta = {str(k): (v if not isinstance(v, float) or math.isfinite(v) else None)
                for k, v in row.items() if k not in used}
        key = str(row[mapping["run_id"]]) if "run_id" in mapping else hashlib.sha256(
            json.dumps(row, sort_keys=True, default=str).encode()).hexdigest()[:16]
        extra_meta: dict[str, Any] = {}
        if "step" in mapping:
            step = _number(row, mapping["step"], line, "step")
            extra_meta = {"step": step, "checkpoint_of": key}
            key = f"{key}@{step:g}"
        run_id = key if "run_id" in mapping else "i-" + hashlib.sha256(f"{experiment}\0{key}".encode()).hexdigest()[:16]
        label = str(size_raw) if size_raw is not None else (f"{params:.3g}" if params else "unknown")
        runs.append(RunSpec(run_id=run_id, experiment=experiment, design_version="import", recipe=recipe,
                            model_size=label, model_params=params, train_tokens=tokens, train_flops=c, seed=seed,
                            metadata={"import_key": key, "columns": meta, **extra_meta}))
        metrics.append(ms)
        flops.append(c if c is not None else math.nan)
    if splits:
        runs = [r.model_copy(update={"split": sp}) for r, sp in zip(runs, splits)]
    elif all(math.isfinite(f) for f in flops):
        mask = heldout_mask(flops, heldout_fraction, min_fit=1)
        runs = [r.model_copy(update={"split": "heldout" if h else "fit"}) for r, h in zip(runs, mask)]
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise TableImportError("two rows have the same run_id; map a unique column to run_id")
    return axes, runs, metrics


def _size_tokens_flops(row: dict[str, Any], mapping: dict[str, str], line: int, size_raw: Any
                       ) -> tuple[float | None, float | None, float | None]:
    """``(N, D, C)`` of one row: N from ``model_params`` or a size label with a suffix (``1.4B``), C = 6 N D when
    not given, D from C when only C is; each finite and positive, else TableImportError naming the row."""
    params = _number(row, mapping["model_params"], line, "model_params") if "model_params" in mapping else None
    if params is None and size_raw is not None:
        try:
            params = parse_count(size_raw)
        except ValueError as err:
            if "suffix" in str(err):
                raise TableImportError(f"row {line}: column {mapping['model_size']!r} (model_size) {err}") from None
            params = None
        if params is not None and not (math.isfinite(params) and params > 0):
            raise TableImportError(f"row {line}: column {mapping['model_size']!r} (model_size) as a parameter "
                                   f"count must be finite and > 0, got {size_raw!r}")
    tokens = _number(row, mapping["train_tokens"], line, "train_tokens") if "train_tokens" in mapping else None
    c = _number(row, mapping["train_flops"], line, "train_flops") if "train_flops" in mapping else None
    if c is None and params and tokens:
        c = training_flops(params, tokens)
        if not math.isfinite(c):
            raise TableImportError(f"row {line}: train_flops = 6 N D overflows (N = {params:g}, D = {tokens:g})")
    if tokens is None and params and c:
        tokens = c / (FLOPS_PER_PARAM_TOKEN * params)
    return params, tokens, c
