"""Readers for what teams already have: lm-evaluation-harness results and W&B run exports, flattened to a table.

Each reader turns its input into rows of text cells (one dict per row) that :func:`grid.staging.stage_table`
then reads like any CSV, and names the columns it maps by default (:data:`DEFAULT_MAPS`; the user's ``--map``
wins for a target it names).

``lm-eval``
    A ``results*.json`` file of lm-evaluation-harness, or a folder searched recursively for them. One row per
    file and task: ``run_id`` (the model, ``pretrained=`` of ``config.model_args``, else ``model_name``),
    ``revision``, ``step`` (from a revision such as ``step143000``), ``model_params``
    (``config.model_num_parameters`` when the harness wrote it), ``task``, ``file``, and each metric of
    ``results.<task>``: ``acc,none`` becomes column ``acc`` and ``acc_stderr,none`` ``acc_stderr`` (another
    filter than ``none`` is kept as ``acc_<filter>``). Tokens are not in the file: map or derive them
    (``--set 'tokens=step*2097152'``).
``wandb``
    A W&B runs export (CSV or Parquet): the UI's table (``Name``, ``State``, config and summary columns side
    by side) or the API's (``name``, ``config`` and ``summary`` columns of dicts, expanded here into one column
    per key; a key in both keeps ``config.``/``summary.`` prefixes). The run id is ``ID``/``id``, else
    ``Name``/``name``, verbatim; a history export's ``_step`` is the checkpoint step.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any

from grid.errors import TableImportError

__all__ = ["SOURCES", "DEFAULT_MAPS", "read_source", "write_rows"]

SOURCES = ("csv", "lm-eval", "wandb")
"""Values of ``import-runs --from``: a CSV or Parquet table (the default), lm-eval results, a W&B export."""
DEFAULT_MAPS: dict[str, list[tuple[str, str]]] = {
    "csv": [],
    "lm-eval": [("run_id", "run_id"), ("task", "benchmark"), ("step", "step"), ("model_params", "model_params")],
    "wandb": [("run_id", "run_id"), ("_step", "step")],
}
"""Per source, ``(column, target)`` pairs mapped when the column exists and the user maps neither."""
_STEP = re.compile(r"(?:^|[^a-z])step[-_]?([0-9]+)", re.IGNORECASE)


def _results_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    found = sorted(p for p in path.rglob("*.json") if p.is_file())
    return [p for p in found if p.name.startswith("results")] or found


def _model_of(config: dict[str, Any], data: dict[str, Any]) -> tuple[str, str]:
    """``(model, revision)`` from ``config.model_args`` (a string ``k=v,...`` or a dict) and the top level."""
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    model = str(args.get("pretrained") or data.get("model_name") or config.get("model") or "")
    revision = str(args.get("revision") or config.get("model_revision") or "")
    return model.strip(), revision.strip()


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return str(value)


def read_lmeval(path: Path) -> list[dict[str, str]]:
    """Rows of lm-evaluation-harness results (see the module docstring); TableImportError when there are none."""
    if not path.exists():
        raise TableImportError(f"file not found: {path}")
    rows: list[dict[str, str]] = []
    for file in _results_files(path):
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            if path.is_file():
                raise TableImportError(f"{file}: not an lm-evaluation-harness results file (unreadable JSON)") from None
            continue
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            continue
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        model, revision = _model_of(config, data)
        step = _STEP.search(revision)
        base = {"run_id": model or file.stem, "revision": revision, "step": step.group(1) if step else "",
                "model_params": _cell(config.get("model_num_parameters")), "file": str(file)}
        for task, metrics in data["results"].items():
            if not isinstance(metrics, dict):
                continue
            row = {**base, "task": str(task)}
            for key, value in metrics.items():
                if key == "alias" or isinstance(value, dict | list):
                    continue
                name, _, filt = str(key).partition(",")
                row[name if filt in ("", "none") else f"{name}_{filt}"] = _cell(value)
            rows.append(row)
    if not rows:
        where = "folder" if path.is_dir() else "file"
        raise TableImportError(f"{path}: no lm-evaluation-harness results in this {where} (a JSON file with a "
                               "\"results\" object per task, as `lm_eval --output_path` writes)")
    return rows


def _as_dict(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    return None


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in d.items():
        if isinstance(v, dict) and "value" in v and len(v) <= 2:  # the API's config form {"value": x, "desc": ...}
            v = v["value"]
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = _cell(v)
    return out


def read_wandb(path: Path) -> list[dict[str, str]]:
    """Rows of a W&B runs export (see the module docstring)."""
    import pandas as pd

    if not path.is_file():
        raise TableImportError(f"file not found: {path}")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path).astype(str)
        elif path.suffix.lower() == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        else:
            raise TableImportError(f"{path}: a W&B export is a .csv or .parquet file, got {path.suffix or 'none'}")
    except (ValueError, OSError, pd.errors.ParserError) as err:
        raise TableImportError(f"{path}: cannot read: {str(err).splitlines()[0]}") from None
    if frame.empty:
        raise TableImportError(f"{path}: the file has a header but no rows")
    rows = []
    nested = [c for c in ("config", "summary") if c in frame.columns]
    for rec in frame.to_dict(orient="records"):
        row = {str(k): _cell(v) for k, v in rec.items() if k not in nested}
        parts = {c: _flat(_as_dict(str(rec[c])) or {}) for c in nested}
        both = set(parts.get("config", {})) & set(parts.get("summary", {}))
        for c, flat in parts.items():
            for k, v in flat.items():
                name = f"{c}.{k}" if k in both or k in row else k
                row[name] = v
        rows.append(row)
    id_col = next((c for c in ("ID", "id", "run_id", "Name", "name") if c in rows[0]), None)
    if id_col is not None and id_col != "run_id":
        for row in rows:
            row.setdefault("run_id", row[id_col])
    return rows


def read_source(source: str, path: str | Path) -> list[dict[str, str]]:
    """Rows of ``path`` read as ``source`` (``lm-eval`` or ``wandb``)."""
    if source == "lm-eval":
        return read_lmeval(Path(path))
    if source == "wandb":
        return read_wandb(Path(path))
    raise TableImportError(f"--from must be one of {', '.join(SOURCES)}, got {source!r}")


def write_rows(rows: list[dict[str, str]], path: Path) -> Path:
    """Write rows (every cell text) as a Parquet file with one text column per key seen; returns ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, None] = {}
    for row in rows:
        for k in row:
            columns.setdefault(k, None)
    table = pa.table({c: pa.array([row.get(c, "") for row in rows], type=pa.string()) for c in columns})
    pq.write_table(table, path)
    return path
