"""Bulk import: a CSV or Parquet table staged by DuckDB's own readers, then stored in one short transaction.

Two phases, so the registry's write lock is held only for the second:

1. :func:`stage_table` reads the file with ``read_csv`` / ``read_parquet`` into a private in-memory DuckDB,
   validates every row in SQL (numbers, finite and positive sizes, tokens and FLOPs, ``C = 6 N D`` finite,
   metric bounds, splits, unique run ids) and writes two tables (runs, metrics) to a private staging DuckDB
   file: no Python rows, DuckDB's memory capped at 512 MB. The rules are those of
   :func:`grid.importer.rows_to_runs`; the top-FLOPs split is :func:`grid.split.heldout_mask` itself.
2. :meth:`ImportStore.store_staged` attaches that file read-only and :meth:`ImportStore.store_runs` compares
   the staged rows with the stored ones with set-based SQL and, in one transaction,
   refuses or applies the differences, inserts the new runs and metrics, keeps every overwritten value in
   ``run_history`` and marks the experiment's fits stale when its data changed.

No silent overwrite: a staged value that differs from the stored one is a *conflict* (run, column, old,
new). ``on_conflict="refuse"`` (the default) raises :class:`~grid.errors.RegistryConflictError` naming them;
``"update"`` (``import-runs --update``) and ``"replace"`` (``simulate --replace``) apply them. Imports are
refused into a simulated or a designed experiment, and simulations into an experiment of real runs.
"""

from __future__ import annotations

import shutil
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb

from grid.errors import RegistryConflictError, TableImportError
from grid.importer import FIXED_TARGETS, MAX_ABS_METRIC, POSITIVE_TARGETS, SPLITS, check_metric_mapped, self_mapped
from grid.models import Conflict, ImportReport, RunSpec
from grid.run_store import RunStore, check_experiment_name
from grid.schema import SCHEMA_VERSION, axis_column, axis_column_ddl
from grid.split import heldout_threshold
from grid.staging import new_stage, release_stage
from toolscale.config import FLOPS_PER_PARAM_TOKEN

__all__ = ["StagedTable", "stage_table", "ImportStore", "RUN_FIELDS"]

RUN_FIELDS = ("experiment", "model_size", "model_params", "train_tokens", "train_flops", "seed", "split")
"""Stored run columns compared on re-import (with every axis column and every metric score)."""
_SHOWN = 3  # conflicts named in the refusal line


@dataclass
class StagedTable:
    """A validated table, ready for :meth:`ImportStore.store_staged` (nothing stored yet).

    The typed rows live in a private DuckDB file ``path`` (tables ``runs`` and ``metrics``, in the shape of
    :func:`specs_to_tables`), not in Python memory; the registry attaches it read-only. The file's folder is
    removed by :meth:`close` (or when the object is collected).
    """

    axes: list[str]
    path: Path
    rows: int
    heldout: int
    read_s: float

    def __post_init__(self) -> None:
        self._cleanup = weakref.finalize(self, release_stage, str(self.path.parent))

    def close(self) -> None:
        """Remove the staging file."""
        self._cleanup()

    def __enter__(self) -> StagedTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _arrow(self, table: str) -> Any:
        con = duckdb.connect(str(self.path), read_only=True)
        try:
            return con.sql(f"SELECT * FROM {table}").to_arrow_table()
        finally:
            con.close()

    @property
    def runs(self) -> Any:
        """The staged runs as an Arrow table (read from :attr:`path`; for small tables and tests)."""
        return self._arrow("runs")

    @property
    def metrics(self) -> Any:
        """The staged metrics as an Arrow table (read from :attr:`path`)."""
        return self._arrow("metrics")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _refuse_duplicate_header(p: Path) -> None:
    """:class:`TableImportError` when a CSV header or a Parquet schema names a column twice (DuckDB would rename
    the second one ``NAME_1`` and a ``--map NAME=...`` would silently read the first)."""
    import csv

    if p.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            header = list(pq.read_schema(p).names)
        except Exception:  # noqa: BLE001 - an unreadable file is named by the reader below
            return
    else:
        with open(p, encoding="utf-8", errors="replace", newline="") as fh:
            first = fh.readline(1 << 20)
        header = next(csv.reader([first]), [])
    seen: dict[str, int] = {}
    for i, name in enumerate(header, 1):
        key = name.strip()
        if key in seen:
            raise TableImportError(f"{p}: column {key!r} is in the header twice (columns {seen[key]} and {i}); "
                                   "rename one, nothing was imported")
        seen[key] = i


def _first(m: duckdb.DuckDBPyConnection, sql: str) -> tuple | None:
    rows = m.execute(sql + " ORDER BY _line LIMIT 1").fetchall()
    return rows[0] if rows else None


def stage_table(path: str | Path, mapping: dict[str, str], *, experiment: str, benchmark: str | None = None,
                heldout_fraction: float = 0.25, score_range: tuple[float, float] | None = None,
                config_axes: Sequence[str] | None = None, memory_limit: str = "512MB") -> StagedTable:
    """Read and validate ``path``; :class:`TableImportError` naming the first bad row (numbered from 2).

    ``config_axes`` (a config's axes) lets columns named exactly like an axis map themselves.
    """
    p = Path(path)
    if not p.is_file():
        raise TableImportError(f"file not found: {p}")
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TableImportError(f"{p}: expected a .csv or .parquet file, got {suffix or 'no extension'}")
    if suffix == ".csv" and p.stat().st_size == 0:
        raise TableImportError(f"{p}: the file is empty")
    _refuse_duplicate_header(p)
    t0 = time.perf_counter()
    m = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "preserve_insertion_order": True})
    m.execute("SET enable_progress_bar = false")
    try:
        reader = (f"read_csv({_lit(str(p))}, all_varchar = true, header = true)" if suffix == ".csv"
                  else f"(SELECT CAST(COLUMNS(*) AS VARCHAR) FROM read_parquet({_lit(str(p))}))")
        try:
            m.execute(f"CREATE TABLE raw AS SELECT row_number() OVER () + 1 AS _line, * FROM {reader}")
        except duckdb.Error as err:
            raise TableImportError(f"{p}: cannot read: {str(err).strip().splitlines()[0]}") from None
        columns = [r[0] for r in m.execute("DESCRIBE raw").fetchall()][1:]
        n = m.execute("SELECT count(*) FROM raw").fetchall()[0][0]
        if n == 0:
            raise TableImportError(f"{p}: the file has a header but no rows")
        if config_axes:
            mapping = self_mapped(mapping, columns, config_axes)
        check_metric_mapped(mapping)
        missing = [c for c in mapping.values() if c not in columns]
        if missing:
            raise TableImportError(f"column {missing[0]!r} not in the file; columns: {', '.join(columns)}")
        if benchmark is None and "benchmark" not in mapping:
            raise TableImportError("name the benchmark: --benchmark NAME, or --map COLUMN=benchmark")
        axes = [t for t in mapping if t not in FIXED_TARGETS]
        numeric = {mapping[t] for t in ("model_params", "train_tokens", "train_flops", "seed", "step", "score",
                                        "loss", "model_size", *axes) if t in mapping}
        casts = "".join(f", TRY_CAST(NULLIF(trim({_q(c)}), '') AS DOUBLE) AS {_num(c)}" for c in sorted(numeric))
        m.execute(f"CREATE TABLE typed_raw AS SELECT *{casts} FROM raw; DROP TABLE raw; "
                  "ALTER TABLE typed_raw RENAME TO raw")
        _validate(m, mapping, axes, score_range)
        out = new_stage() / "stage.duckdb"
        try:
            heldout = _build(m, mapping, axes, columns, experiment, benchmark, heldout_fraction, out)
        except BaseException:
            shutil.rmtree(out.parent, ignore_errors=True)
            raise
        return StagedTable(axes=axes, path=out, rows=n, heldout=heldout, read_s=time.perf_counter() - t0)
    finally:
        m.close()


def _num(col: str) -> str:
    """The column holding ``col`` parsed as a number once (NULL for a blank or unparsable cell)."""
    return _q("#" + col)


def _validate(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: list[str],
              score_range: tuple[float, float] | None) -> None:
    numeric = [t for t in ("model_params", "train_tokens", "train_flops", "seed", "step", "score", "loss", *axes)
               if t in mapping]
    for target in numeric:
        col = mapping[target]
        optional = target in ("score", "loss")  # an empty metric cell is a missing value
        blank = f"trim(coalesce({_q(col)}, '')) = ''"
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} IS NULL"
                        + (f" AND NOT {blank}" if optional else ""))
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be a number, got {bad[1]!r}")
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE NOT isfinite({_num(col)})")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be finite, got {bad[1]!r}")
        if target in POSITIVE_TARGETS:
            bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} <= 0")
            if bad:
                raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be > 0, got {bad[1]!r}")
        if optional:
            bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE abs({_num(col)}) > {MAX_ABS_METRIC}")
            if bad:
                raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be within "
                                       f"+-{MAX_ABS_METRIC:g}, got {bad[1]!r}")
    if "model_size" in mapping and "model_params" not in mapping:
        col = mapping["model_size"]
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} IS NOT NULL AND "
                        f"(NOT isfinite({_num(col)}) OR {_num(col)} <= 0)")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} (model_size) as a parameter count must be "
                                   f"finite and > 0, got {bad[1]!r}")
    if "score" in mapping and score_range is not None:
        col = mapping["score"]
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} NOT BETWEEN {score_range[0]} "
                        f"AND {score_range[1]}")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} (score) must be in [{score_range[0]:g}, "
                                   f"{score_range[1]:g}], got {bad[1]!r}")
    if "split" in mapping:
        col = mapping["split"]
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE coalesce(trim({_q(col)}), '') NOT IN "
                        f"({', '.join(_lit(s) for s in SPLITS)})")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} (split) must be fit or heldout, got {bad[1]!r}")


def _build(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: list[str], columns: list[str],
           experiment: str, benchmark: str | None, heldout_fraction: float, out: Path) -> int:
    """Write the typed runs and metrics tables, with derived N, D, C, ids and the split, to DuckDB file ``out``.

    Returns the number of held-out runs.
    """
    def col(target: str, default: str = "CAST(NULL AS DOUBLE)") -> str:
        return _num(mapping[target]) if target in mapping else default

    size_num = _num(mapping["model_size"]) if "model_size" in mapping else "CAST(NULL AS DOUBLE)"
    params = f"coalesce({col('model_params')}, {size_num})"
    used = set(mapping.values())
    cells = ", ".join(f"coalesce({_q(c)}, '')" for c in columns)
    key = f"trim({_q(mapping['run_id'])})" if "run_id" in mapping else f"left(sha256(concat_ws(chr(31), {cells})), 16)"
    base_key = key
    step = _num(mapping["step"]) if "step" in mapping else None
    if step is not None:  # rows sharing a run id are checkpoints of one run: one stored run per step
        key = f"({base_key}) || '@' || format('{{:g}}', {step})"
    meta_cols = [c for c in columns if c not in used]
    meta = (f"json_object({', '.join(f'{_lit(c)}, {_q(c)}' for c in meta_cols)})" if meta_cols else "json_object()")
    recipe = f"json_object({', '.join(f'{_lit(a)}, {_num(mapping[a])}' for a in axes)})" if axes else "json_object()"
    label = (f"coalesce(trim({_q(mapping['model_size'])}), '')" if "model_size" in mapping
             else f"coalesce(format('{{:.3g}}', {params}), 'unknown')")
    bench = f"trim({_q(mapping['benchmark'])})" if "benchmark" in mapping else _lit(benchmark or "")
    split = f"trim({_q(mapping['split'])})" if "split" in mapping else "'fit'"
    k6 = FLOPS_PER_PARAM_TOKEN
    m.execute(f"""CREATE TABLE typed AS
        WITH base AS (SELECT _line, {key} AS import_key, {label} AS model_size,
            {params} AS model_params, {col('train_tokens')} AS d0, {col('train_flops')} AS c0,
            CAST(coalesce({col('seed')}, 0) AS INTEGER) AS seed, {bench} AS benchmark, {split} AS split,
            {recipe} AS recipe, {meta} AS columns,
            {col('score')} AS score, {col('loss')} AS loss,
            {step if step is not None else "CAST(NULL AS DOUBLE)"} AS step,
            {base_key if step is not None else "CAST(NULL AS VARCHAR)"} AS checkpoint_of
            {''.join(f', {_num(mapping[a])} AS {_q(axis_column(a))}' for a in axes)}
            FROM raw),
        flops AS (SELECT *, coalesce(c0, {k6} * model_params * d0) AS c FROM base)
        SELECT * EXCLUDE (d0, c0), coalesce(d0, c / ({k6} * model_params)) AS d,
            'i-' || left(sha256({_lit(experiment)} || chr(0) || import_key), 16) AS run_id
        FROM flops""")
    m.execute("DROP TABLE raw")
    bad = _first(m, "SELECT _line, model_params, d FROM typed WHERE c IS NOT NULL AND NOT isfinite(c)")
    if bad:
        raise TableImportError(f"row {bad[0]}: train_flops = 6 N D overflows (N = {bad[1]:g}, D = {bad[2]:g})")
    dups = m.execute("SELECT import_key, count(*) FROM typed GROUP BY import_key HAVING count(*) > 1 LIMIT 1").fetchall()
    dup = dups[0] if dups else None
    if dup:
        raise TableImportError(f"two rows have the same run_id ({dup[0]!r}, {dup[1]} rows); map a unique column "
                               "to run_id")
    split = "split"  # the split as written in the file, or the top-FLOPs rule applied as the runs are written
    if "split" not in mapping:
        flops = m.execute("SELECT c FROM typed").fetchnumpy()["c"]
        if not hasattr(flops, "mask") or not flops.mask.any():
            cut = heldout_threshold(flops.astype(float).tolist(), heldout_fraction, min_fit=1)
            if cut is not None:
                bound = f"CAST({_lit(repr(float(cut[0])))} AS DOUBLE)"  # exact: the shortest repr round-trips
                split = f"CASE WHEN c {'>' if cut[1] else '>='} {bound} THEN 'heldout' ELSE split END"
        del flops
    axis_sel = "".join(f", {_q(axis_column(a))}" for a in axes)
    m.execute(f"ATTACH {_lit(str(out))} AS out")
    m.execute(f"""CREATE TABLE out.runs AS SELECT run_id, {_lit(experiment)} AS experiment, 'import' AS design_version,
        CAST(recipe AS VARCHAR) AS recipe, model_size, model_params, d AS train_tokens, c AS train_flops, seed,
        {split} AS split,
        CAST((CASE WHEN step IS NULL
              THEN json_object('import_key', import_key, 'columns', columns, 'token_multiplier', 1.0)
              ELSE json_object('import_key', import_key, 'columns', columns, 'token_multiplier', 1.0, 'step', step,
                               'checkpoint_of', checkpoint_of) END) AS VARCHAR)
            AS metadata{axis_sel}
        FROM typed""")  # insertion order (preserve_insertion_order) is the file's order: no sort
    m.execute("""CREATE TABLE out.metrics AS
        SELECT run_id, benchmark, 'score' AS metric, '1' AS version, score, CAST(NULL AS DOUBLE) AS stderr,
               CAST(NULL AS INTEGER) AS n_items, TRUE AS higher_is_better FROM typed WHERE score IS NOT NULL
        UNION ALL
        SELECT run_id, benchmark, 'loss', '1', loss, NULL, NULL, FALSE FROM typed WHERE loss IS NOT NULL
        """)
    heldout = m.execute("SELECT count(*) FROM out.runs WHERE split = 'heldout'").fetchall()[0][0]
    m.execute("DETACH out")
    return int(heldout)


def specs_to_tables(runs: Sequence[RunSpec], metrics: Sequence[Sequence[Any]]) -> tuple[Any, Any]:
    """Arrow tables in :func:`stage_table`'s shape from planned runs and their :class:`MetricResult` lists."""
    import json

    import pyarrow as pa

    axes = sorted({a for r in runs for a in r.recipe})
    cols: dict[str, list[Any]] = {k: [] for k in ("run_id", "experiment", "design_version", "recipe", "model_size",
                                                  "model_params", "train_tokens", "train_flops", "seed", "split",
                                                  "metadata")}
    for a in axes:
        cols[axis_column(a)] = []
    for r in runs:
        for k, v in (("run_id", r.run_id), ("experiment", r.experiment), ("design_version", r.design_version),
                     ("recipe", json.dumps(r.recipe, sort_keys=True)), ("model_size", r.model_size),
                     ("model_params", r.model_params), ("train_tokens", r.train_tokens),
                     ("train_flops", r.train_flops), ("seed", r.seed), ("split", r.split),
                     ("metadata", json.dumps({**r.metadata, "token_multiplier": r.token_multiplier},
                                             sort_keys=True, default=str))):
            cols[k].append(v)
        for a in axes:
            cols[axis_column(a)].append(float(r.recipe[a]) if a in r.recipe else None)
    schema = pa.schema([(k, pa.float64() if k in ("model_params", "train_tokens", "train_flops")
                         or k.startswith("axis_") else pa.int32() if k == "seed" else pa.string()) for k in cols])
    mrows = [(r.run_id, m.benchmark, m.metric, m.version, m.score, m.stderr, m.n_items, m.higher_is_better)
             for r, ms in zip(runs, metrics, strict=True) for m in ms]
    mnames = ["run_id", "benchmark", "metric", "version", "score", "stderr", "n_items", "higher_is_better"]
    mtypes = [pa.string(), pa.string(), pa.string(), pa.string(), pa.float64(), pa.float64(), pa.int32(), pa.bool_()]
    mt = pa.table({n: pa.array([row[i] for row in mrows], type=t) for i, (n, t) in enumerate(zip(mnames, mtypes))})
    return pa.table(cols, schema=schema), mt


class ImportStore(RunStore):
    """Runs produced elsewhere (imported tables, simulations) stored in one transaction, never silently."""

    def experiment_kind(self, name: str) -> str | None:
        """``simulated``, ``designed`` (it has a ``grid design``), ``imported``, or None when absent."""
        rows = self.con.execute("SELECT simulated FROM experiments WHERE name = ?", [name]).fetchall()
        row = rows[0] if rows else None
        if row is None:
            return None
        if row[0]:
            return "simulated"
        designs = self.con.execute("SELECT count(*) FROM designs WHERE experiment = ? AND design_version <> 'import'",
                                   [name]).fetchall()[0][0]
        return "designed" if designs else "imported"

    def import_runs(self, experiment: str, axes: Sequence[str], runs: Sequence[RunSpec],
                    metrics: Sequence[Sequence[Any]], *, simulated: bool = False, source: str = "import",
                    on_conflict: Literal["refuse", "update", "replace"] = "refuse",
                    config: dict | None = None) -> int:
        """Store finished runs given as :class:`RunSpec` (simulations, tests); returns how many were new."""
        if len(runs) != len(metrics):
            raise TableImportError(f"import_runs: {len(runs)} runs but {len(metrics)} metric lists")
        run_t, metric_t = specs_to_tables(runs, metrics)
        report = self.store_runs(experiment, axes, run_t, metric_t, kind="simulated" if simulated else "import",
                                 source=source, on_conflict=on_conflict, config=config)
        return report.new_runs

    def store_runs(self, experiment: str, axes: Sequence[str], runs: Any, metrics: Any, *,
                   kind: Literal["import", "simulated"] = "import", source: str = "import",
                   on_conflict: Literal["refuse", "update", "replace"] = "refuse", config: dict | None = None,
                   heldout: int | None = None, progress: Callable[[str], None] | None = None) -> ImportReport:
        """Compare staged ``runs`` / ``metrics`` with the stored rows and store them, all or nothing.

        ``runs`` / ``metrics`` are Arrow tables, or (from :meth:`store_staged`) names of attached tables.
        ``runs`` and ``metrics`` have no PRIMARY KEY (schema v4): staged keys are checked unique first and only
        rows whose key is not stored are inserted (anti-joins), each table in one ``INSERT ... SELECT``.

        Returns an :class:`ImportReport`; raises :class:`RegistryConflictError` (nothing changed) for an
        experiment of the wrong kind, or for conflicts under ``on_conflict="refuse"``.
        """
        t0 = time.perf_counter()
        check_experiment_name(experiment)
        current = self.experiment_kind(experiment)
        flag = "--replace" if kind == "simulated" else "--update"
        if kind == "import" and current in ("simulated", "designed"):
            raise RegistryConflictError(f"experiment {experiment!r} is {current}; imported runs would mix into it "
                                        "(they have no design axes or are real among simulated ones): import into "
                                        "another experiment name")
        if kind == "simulated" and current in ("imported", "designed"):
            raise RegistryConflictError(f"experiment {experiment!r} is {current} and holds real runs; simulate "
                                        "into another experiment name")
        with self._staged(runs, metrics):
            self._check_unique()
            with self.transaction():
                for axis in axes:
                    self.con.execute(axis_column_ddl(axis))
                self._upsert_experiment(experiment, axes, simulated=kind == "simulated", config=config)
                conflicts, n_conflicts, changed_runs = self._conflicts(axes)
                if n_conflicts and on_conflict == "refuse":
                    shown = "; ".join(f"run {c.run_id} {c.column}: {c.old} -> {c.new}" for c in conflicts)
                    more = f" and {n_conflicts - len(conflicts)} more" if n_conflicts > len(conflicts) else ""
                    raise RegistryConflictError(
                        f"{n_conflicts} stored value{'s' if n_conflicts > 1 else ''} of experiment {experiment!r} "
                        f"would change ({shown}{more}); nothing was changed. Pass {flag} to apply them (the old "
                        "values are kept in the run_history table)")
                if n_conflicts:
                    self._apply_conflicts(axes, source)
                new_runs = self._insert_new(axes, source)
                new_metrics = self._insert_new_metrics()
                stale = 0
                if n_conflicts or new_runs or new_metrics:
                    what = (f"{source} changed {n_conflicts} stored values" if n_conflicts
                            else f"{source} added {new_runs} runs and {new_metrics} metrics")
                    stale = len(self.con.execute(
                        "UPDATE fits SET stale_reason = ? WHERE experiment = ? AND stale_reason IS NULL "
                        "RETURNING fit_id", [f"{what} at {_stamp()}", experiment]).fetchall())
            rows = self.con.execute("SELECT count(*) FROM _s_runs").fetchall()[0][0]
            split_n = heldout if heldout is not None else self.con.execute(
                "SELECT count(*) FROM _s_runs WHERE split = 'heldout'").fetchall()[0][0]
        report = ImportReport(experiment=experiment, rows=rows, new_runs=new_runs, new_metrics=new_metrics,
                              updated_runs=changed_runs if n_conflicts else 0, conflicts=n_conflicts,
                              conflict_examples=conflicts, heldout=split_n, axes=list(axes), stale_fits=stale,
                              lock_s=time.perf_counter() - t0)
        if progress:
            progress(f"stored {report.new_runs:,} new runs, {report.new_metrics:,} metrics "
                     f"({report.updated_runs:,} runs updated) in {report.lock_s:.1f} s")
        return report

    def store_staged(self, staged: StagedTable, experiment: str, **kwargs: Any) -> ImportReport:
        """:meth:`store_runs` for a :func:`stage_table` result: its file is attached read-only, never loaded.

        DuckDB's memory for the write is capped at 512 MB while it runs (the rows stream from the file).
        """
        old = self.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        self.con.execute("SET memory_limit = '512MB'")
        self.con.execute(f"ATTACH {_lit(str(staged.path))} AS _stage (READ_ONLY)")
        try:
            return self.store_runs(experiment, staged.axes, "_stage.runs", "_stage.metrics",
                                   heldout=staged.heldout, **kwargs)
        finally:
            self.con.execute("DETACH _stage")
            self.con.execute(f"SET memory_limit = {_lit(old)}")

    @contextmanager
    def _staged(self, runs: Any, metrics: Any) -> Iterator[None]:
        """``_s_runs`` / ``_s_metrics``: views of Arrow tables, or of tables named by a string (an attached file)."""
        for name, table in (("_s_runs", runs), ("_s_metrics", metrics)):
            if isinstance(table, str):
                self.con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM {table}")
            else:
                self.con.register(name, table)
        try:
            yield
        finally:
            for name, table in (("_s_runs", runs), ("_s_metrics", metrics)):
                if isinstance(table, str):
                    self.con.execute(f"DROP VIEW IF EXISTS {name}")
                else:
                    self.con.unregister(name)

    def _check_unique(self) -> None:
        """:class:`TableImportError` if a staged run id, or a staged (run, benchmark, metric), is there twice.

        ``runs`` and ``metrics`` have no PRIMARY KEY (schema v4); with these checks and the anti-joins of
        :meth:`_insert_new` / :meth:`_insert_new_metrics` the stored keys stay unique.
        """
        dup = self.con.execute("SELECT run_id, count(*) FROM _s_runs GROUP BY run_id HAVING count(*) > 1 "
                               "LIMIT 1").fetchall()
        if dup:
            raise TableImportError(f"run id {dup[0][0]!r} is there {dup[0][1]} times in one import; nothing was "
                                   "changed")
        dup = self.con.execute("SELECT run_id, benchmark, metric, count(*) FROM _s_metrics GROUP BY ALL "
                               "HAVING count(*) > 1 LIMIT 1").fetchall()
        if dup:
            raise TableImportError(f"metric {dup[0][1]}/{dup[0][2]} of run {dup[0][0]!r} is there {dup[0][3]} "
                                   "times in one import; nothing was changed")

    def _upsert_experiment(self, name: str, axes: Sequence[str], *, simulated: bool, config: dict | None) -> None:
        import json

        from grid.connection import now

        rows = self.con.execute("SELECT axes FROM experiments WHERE name = ?", [name]).fetchall()
        row = rows[0] if rows else None
        if row is None:
            self.con.execute("INSERT INTO experiments VALUES (?, ?, ?, ?, ?, ?)",
                             [name, self._json(config) if config is not None else None, self._json(list(axes)),
                              simulated, now(), SCHEMA_VERSION])
            return
        known = json.loads(row[0] or "[]")
        self.con.execute("UPDATE experiments SET axes = ? WHERE name = ?",
                         [self._json(known + [a for a in axes if a not in known]), name])
        if config is not None:
            self.con.execute("UPDATE experiments SET config = ? WHERE name = ?", [self._json(config), name])

    def _diff_sql(self, axes: Sequence[str]) -> str:
        parts = [f"SELECT s.run_id, {_lit(f)} AS col, CAST(r.{f} AS VARCHAR) AS old, CAST(s.{f} AS VARCHAR) AS new "
                 f"FROM _s_runs s JOIN runs r USING (run_id) WHERE r.{f} IS DISTINCT FROM s.{f}" for f in RUN_FIELDS]
        for a in axes:
            c = _q(axis_column(a))
            parts.append(f"SELECT s.run_id, {_lit(a)}, CAST(r.{c} AS VARCHAR), CAST(s.{c} AS VARCHAR) FROM _s_runs s "
                         f"JOIN runs r USING (run_id) WHERE r.{c} IS DISTINCT FROM s.{c}")
        parts.append("SELECT s.run_id, s.benchmark || '/' || s.metric, CAST(m.score AS VARCHAR), "
                     "CAST(s.score AS VARCHAR) FROM _s_metrics s JOIN (SELECT * FROM metrics WHERE step IS NULL) m USING (run_id, benchmark, metric) "
                     "WHERE m.score IS DISTINCT FROM s.score")
        return " UNION ALL ".join(parts)

    def _conflicts(self, axes: Sequence[str]) -> tuple[list[Conflict], int, int]:
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE _conflicts AS {self._diff_sql(axes)}")
        n, runs = self.con.execute("SELECT count(*), count(DISTINCT run_id) FROM _conflicts").fetchall()[0]
        shown = [Conflict(run_id=r[0], column=r[1], old=r[2], new=r[3]) for r in self.con.execute(
            f"SELECT run_id, col, old, new FROM _conflicts ORDER BY run_id, col LIMIT {_SHOWN}").fetchall()]
        return shown, int(n), int(runs)

    def _apply_conflicts(self, axes: Sequence[str], source: str) -> None:
        from grid.connection import now

        self.con.execute("INSERT INTO run_history SELECT run_id, col, old, new, ?, ?, ? FROM _conflicts",
                         [now(), source, SCHEMA_VERSION])
        sets = ", ".join([f"{f} = s.{f}" for f in RUN_FIELDS if f != "experiment"]
                         + [f"{_q(axis_column(a))} = s.{_q(axis_column(a))}" for a in axes]
                         + ["recipe = s.recipe", "metadata = s.metadata"])
        self.con.execute(f"UPDATE runs SET {sets} FROM _s_runs s WHERE runs.run_id = s.run_id AND "
                         "runs.run_id IN (SELECT run_id FROM _conflicts)")
        self.con.execute("UPDATE metrics SET score = s.score, stderr = s.stderr, n_items = s.n_items, "
                         "benchmark_version = s.version FROM _s_metrics s WHERE metrics.run_id = s.run_id AND "
                         "metrics.benchmark = s.benchmark AND metrics.metric = s.metric AND metrics.step IS NULL AND "
                         "metrics.score IS DISTINCT FROM s.score")

    def _insert_new(self, axes: Sequence[str], source: str) -> int:
        from grid.connection import code_version, now

        axis_cols = "".join(f", {_q(axis_column(a))}" for a in axes)
        n = self.con.execute(
            f"""INSERT INTO runs (run_id, experiment, design_version, recipe, model_size, model_params, train_tokens,
                train_flops, seed, status, source, metadata, created_at, finished_at, schema_version, split,
                code_version{axis_cols})
            SELECT s.run_id, s.experiment, s.design_version, s.recipe, s.model_size, s.model_params, s.train_tokens,
                s.train_flops, s.seed, 'done', ?, s.metadata, ?, ?, ?, s.split, ?{''.join(f', s.{_q(axis_column(a))}'
                                                                                          for a in axes)}
            FROM _s_runs s ANTI JOIN runs r USING (run_id)""",
            [source, now(), now(), SCHEMA_VERSION, code_version()]).fetchall()[0][0]
        return int(n)

    def _insert_new_metrics(self) -> int:
        from grid.connection import now

        n = self.con.execute(
            """INSERT INTO metrics (run_id, benchmark, metric, benchmark_version, score, stderr, n_items,
                higher_is_better, created_at, schema_version)
            SELECT s.run_id, s.benchmark, s.metric, s.version, s.score, s.stderr, s.n_items, s.higher_is_better, ?, ?
            FROM _s_metrics s ANTI JOIN (SELECT * FROM metrics WHERE step IS NULL) m USING (run_id, benchmark, metric)""",
            [now(), SCHEMA_VERSION]).fetchall()[0][0]
        return int(n)


def _stamp() -> str:
    from grid.connection import now

    return now().strftime("%Y-%m-%d %H:%M:%S UTC")
