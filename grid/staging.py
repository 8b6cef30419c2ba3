"""Staging a table of runs: DuckDB reads, filters, types and checks it, then writes runs and metrics to a file.

:func:`stage_table` is phase 1 of a bulk import (:mod:`grid.import_store` is phase 2, the one that holds the
registry's write lock). Everything happens in a private in-memory DuckDB, in set-based SQL, with no Python rows:

1. read the file (``read_csv`` / ``read_parquet``, every cell as text), numbering rows from 2 as a spreadsheet
   does; ``--set NAME=EXPR`` adds derived columns and ``--where EXPR`` keeps the rows it is true for, both
   evaluated on a typed view (a column whose every cell is a number, or a number with a size suffix, is a number);
2. type the mapped columns: ``NaN``, ``null``, ``none`` and blank cells are missing values; sizes, tokens, FLOPs
   and axes accept the suffixes K, M, B (or G) and T (``70M``, ``2.8B``, ``1.4T``);
3. group rows into runs: a run is the ``run_id`` column (kept verbatim as the registry's run id), else the
   run-level fields the map names; with a ``benchmark`` column (a long table, one row per run and task) each
   row adds one metric to its run, and the run-level fields of its rows must agree; with a ``step`` column
   ``checkpoints="last"`` keeps each run's last checkpoint and ``"all"`` stores one run per checkpoint
   (``<run>@<step>``);
4. check every value (finite, positive sizes, ``C = 6 N D`` finite, metric bounds, splits, one value per run,
   task and step), derive the missing one of D and C, apply the top-FLOPs split over runs, and write the
   ``runs`` and ``metrics`` tables to a private staging DuckDB file.

Staging folders are private (``<tmp>/toolscale-stage-XXXX/stage.duckdb``) and hold an ``owner.lock`` that the
importing process keeps ``flock``-ed while it lives; the kernel drops the lock when the process dies, however it
dies. The next import removes every folder whose lock nobody holds (:func:`sweep_stale_stages`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from grid.errors import TableImportError
from grid.importer import (FIXED_TARGETS, MAX_ABS_METRIC, POSITIVE_TARGETS, SPLITS, SUFFIXES, check_metric_mapped,
                           self_mapped)
from grid.staging_runs import _first, _lit, _num, _q, build_runs

__all__ = ["StagedTable", "stage_table", "STAGE_PREFIX", "new_stage", "release_stage",
           "sweep_stale_stages"]

_NUMBER = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"


@dataclass
class StagedTable:
    """A validated table, ready for :meth:`grid.import_store.ImportStore.store_staged` (nothing stored yet).

    The typed rows live in a private DuckDB file ``path`` (tables ``runs`` and ``metrics``, in the shape of
    :func:`grid.import_store.specs_to_tables`), not in Python memory; the registry attaches it read-only. The
    file's folder is removed by :meth:`close` (or when the object is collected).
    """

    axes: list[str]
    path: Path
    rows: int
    heldout: int
    read_s: float
    notes: list[str] = field(default_factory=list)

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


def _macros(m: duckdb.DuckDBPyConnection) -> None:
    """``ts_blank(s)``: a missing cell; ``ts_num(s)``: the number, size suffix applied (NULL if none);
    ``ts_badsuffix(s)``: a number followed by letters that are not a size suffix."""
    cases = " ".join(f"WHEN {_lit(k)} THEN {v:g}" for k, v in SUFFIXES.items())
    letters = "".join(SUFFIXES) + "".join(SUFFIXES).lower()
    m.execute("CREATE MACRO ts_blank(s) AS s IS NULL OR lower(trim(s)) IN ('', 'nan', 'null', 'none')")
    m.execute(f"""CREATE MACRO ts_num(s) AS CASE WHEN ts_blank(s) THEN NULL ELSE coalesce(TRY_CAST(trim(s) AS DOUBLE),
        CASE WHEN regexp_full_match(trim(s), '{_NUMBER}\\s*[{letters}]')
        THEN TRY_CAST(rtrim(left(trim(s), length(trim(s)) - 1)) AS DOUBLE) * (CASE upper(right(trim(s), 1)) {cases} END)
        END) END""")
    m.execute(f"""CREATE MACRO ts_badsuffix(s) AS NOT ts_blank(s) AND ts_num(s) IS NULL
        AND regexp_full_match(trim(s), '{_NUMBER}\\s*[A-Za-z]+')""")
    m.execute("CREATE MACRO ts_metric(s) AS CASE WHEN ts_blank(s) THEN NULL ELSE TRY_CAST(trim(s) AS DOUBLE) END")


def _read(m: duckdb.DuckDBPyConnection, p: Path) -> list[str]:
    """Table ``raw`` (every cell as text, ``_line`` from 2); returns the file's columns."""
    suffix = p.suffix.lower()
    reader = (f"read_csv({_lit(str(p))}, all_varchar = true, header = true)" if suffix == ".csv"
              else f"(SELECT CAST(COLUMNS(*) AS VARCHAR) FROM read_parquet({_lit(str(p))}))")
    try:
        m.execute(f"CREATE TABLE raw AS SELECT row_number() OVER () + 1 AS _line, * FROM {reader}")
    except duckdb.Error as err:
        lines = str(err).strip().splitlines()
        why = "".join(f"; {line.strip()}" for line in lines[1:] if "not utf-8" in line.lower())
        raise TableImportError(f"{p}: cannot read: {lines[0]}{why}") from None
    columns = [r[0] for r in m.execute("DESCRIBE raw").fetchall()][1:]
    if suffix == ".csv" and len(columns) == 1 and "," in columns[0]:
        _refuse_ragged(p)  # DuckDB's sniffer falls back to one column when rows differ in length
    return columns


def _refuse_ragged(p: Path) -> None:
    """:class:`TableImportError` naming the first row whose field count differs from the header's."""
    import csv

    with p.open(newline="", encoding="utf-8", errors="replace") as fh:
        rows = csv.reader(fh)
        width = len(next(rows, []))
        for line, row in enumerate(rows, start=2):
            if row and len(row) != width:
                raise TableImportError(f"{p}: row {line} has {len(row)} fields, the header {width}; every row needs "
                                       "one cell per column (an empty cell is a missing value)")


def _typed_view(m: duckdb.DuckDBPyConnection, columns: list[str]) -> None:
    """View ``v``: a column whose every filled cell is a number (size suffixes allowed) is a DOUBLE, the others
    text; missing cells are NULL. ``--where`` and ``--set`` see this view."""
    checks = ", ".join(f"count(*) FILTER (WHERE NOT ts_blank({_q(c)}) AND ts_num({_q(c)}) IS NULL)" for c in columns)
    bad = m.execute(f"SELECT {checks} FROM raw").fetchall()[0] if columns else ()
    cols = [f"ts_num({_q(c)}) AS {_q(c)}" if n == 0 else f"CASE WHEN ts_blank({_q(c)}) THEN NULL ELSE {_q(c)} END "
            f"AS {_q(c)}" for c, n in zip(columns, bad)]
    m.execute(f"CREATE OR REPLACE VIEW v AS SELECT _line{''.join(', ' + c for c in cols)} FROM raw")


def _expression_error(flag: str, expr: str, err: duckdb.Error, columns: list[str]) -> TableImportError:
    import re

    text = str(err).strip().splitlines()[0]
    named = re.search(r'Referenced column "([^"]+)" not found', text)
    shown = ", ".join(columns)
    if named:
        return TableImportError(f"{flag} {expr!r} names no column {named.group(1)!r}; columns: {shown}")
    return TableImportError(f"{flag} {expr!r} cannot be evaluated: {text.split(': ', 1)[-1]}")


def _derive(m: duckdb.DuckDBPyConnection, columns: list[str], derive: Sequence[str]) -> list[str]:
    """``--set NAME=EXPR``: add (or replace) text column NAME with EXPR evaluated on the typed view."""
    for item in derive:
        name, sep, expr = item.partition("=")
        name, expr = name.strip(), expr.strip()
        if not sep or not name or not expr:
            raise TableImportError(f"--set must be NAME=EXPRESSION (e.g. tokens=step*2097152), got {item!r}")
        _typed_view(m, columns)
        try:
            m.execute(f"CREATE TABLE _d AS SELECT _line, CAST(({expr}) AS VARCHAR) AS _x FROM v")
        except duckdb.Error as err:
            raise _expression_error("--set", item, err, columns) from None
        kept = ", ".join(f"r.{_q(c)}" for c in columns if c != name)
        m.execute(f"CREATE TABLE raw2 AS SELECT r._line{', ' + kept if kept else ''}, d._x AS {_q(name)} FROM raw r "
                  "JOIN _d d USING (_line) ORDER BY r._line; DROP TABLE _d; DROP TABLE raw; "
                  "ALTER TABLE raw2 RENAME TO raw")
        columns = [c for c in columns if c != name] + [name]
    return columns


def _filter(m: duckdb.DuckDBPyConnection, columns: list[str], where: str, notes: list[str]) -> None:
    """``--where EXPR``: keep the rows for which EXPR (on the typed view) is true."""
    _typed_view(m, columns)
    before = m.execute("SELECT count(*) FROM raw").fetchall()[0][0]
    try:
        m.execute(f"CREATE TABLE _keep AS SELECT _line FROM v WHERE ({where})")
    except duckdb.Error as err:
        raise _expression_error("--where", where, err, columns) from None
    m.execute("DELETE FROM raw WHERE _line NOT IN (SELECT _line FROM _keep); DROP TABLE _keep")
    after = m.execute("SELECT count(*) FROM raw").fetchall()[0][0]
    if after == 0:
        raise TableImportError(f"--where {where!r} keeps none of the {before:,} rows")
    notes.append(f"--where kept {after:,} of {before:,} rows")


def stage_table(path: str | Path, mapping: dict[str, str], *, experiment: str, benchmark: str | None = None,
                heldout_fraction: float = 0.25, score_range: tuple[float, float] | None = None,
                config_axes: Sequence[str] | None = None, where: str | None = None, derive: Sequence[str] = (),
                checkpoints: Literal["last", "all"] = "last", weight: str | None = None,
                memory_limit: str = "512MB") -> StagedTable:
    """Read and validate ``path``; :class:`TableImportError` naming the first bad row (numbered from 2).

    Parameters
    ----------
    mapping : ``target -> column`` (:func:`grid.importer.parse_column_map`); targets that are not fields are axes.
    config_axes : a config's axes: columns named exactly like one map themselves.
    where : a SQL condition on the file's columns (``--where``); derive: ``NAME=EXPR`` columns (``--set``).
    checkpoints : with a ``step`` column, keep each run's ``last`` checkpoint or ``all`` of them.
    weight : a column of standard errors stored with the score (else the loss) and used as fit weights.
    """
    p = Path(path)
    if p.is_dir():
        raise TableImportError(f"{p} is a folder; give a .csv or .parquet file (a folder of lm-eval results: "
                               "--from lm-eval)")
    if not p.is_file():
        raise TableImportError(f"file not found: {p}")
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TableImportError(f"{p}: expected a .csv or .parquet file, got {suffix or 'no extension'}")
    if suffix == ".csv" and p.stat().st_size == 0:
        raise TableImportError(f"{p}: the file is empty")
    _refuse_duplicate_header(p)
    t0 = time.perf_counter()
    notes: list[str] = []
    m = duckdb.connect(":memory:", config={"memory_limit": memory_limit, "preserve_insertion_order": True})
    m.execute("SET enable_progress_bar = false")
    out = new_stage() / "stage.duckdb"
    try:
        _macros(m)
        columns = _read(m, p)
        m.execute(f"ATTACH {_lit(str(out))} AS out")
        m.execute("SET enable_external_access = false")  # --where / --set cannot read or write other files
        if m.execute("SELECT count(*) FROM raw").fetchall()[0][0] == 0:
            raise TableImportError(f"{p}: the file has a header but no rows")
        columns = _derive(m, columns, derive)
        if where:
            _filter(m, columns, where, notes)
        if config_axes:
            mapping = self_mapped(mapping, columns, config_axes)
        try:
            check_metric_mapped(mapping)
        except TableImportError as err:
            raise TableImportError(f"{err}; columns: {', '.join(columns)}") from None
        missing = [c for c in [*mapping.values(), *([weight] if weight else [])] if c not in columns]
        if missing:
            raise TableImportError(f"column {missing[0]!r} not in the file; columns: {', '.join(columns)}")
        if benchmark is None and "benchmark" not in mapping:
            raise TableImportError("name the benchmark: --benchmark NAME, or --map COLUMN=benchmark")
        axes = [t for t in mapping if t not in FIXED_TARGETS]
        n = m.execute("SELECT count(*) FROM raw").fetchall()[0][0]
        _type(m, mapping, axes, weight, score_range)
        heldout = build_runs(m, mapping, axes, columns, experiment=experiment, benchmark=benchmark,
                             heldout_fraction=heldout_fraction, checkpoints=checkpoints, weight=weight, notes=notes)
        m.execute("DETACH out")
        return StagedTable(axes=axes, path=out, rows=n, heldout=heldout, read_s=time.perf_counter() - t0,
                           notes=notes)
    except BaseException:
        release_stage(str(out.parent))
        raise
    finally:
        m.close()


_METRICS = ("score", "loss")


def _type(m: duckdb.DuckDBPyConnection, mapping: dict[str, str], axes: list[str], weight: str | None,
          score_range: tuple[float, float] | None) -> None:
    """Add a parsed number column per mapped numeric column, then check every value (the first bad row named)."""
    counts = [t for t in ("model_params", "train_tokens", "train_flops", "seed", "step", "model_size", *axes)
              if t in mapping]
    metric_cols = {mapping[t] for t in _METRICS if t in mapping} | ({weight} if weight else set())
    count_cols = {mapping[t] for t in counts} - metric_cols
    casts = "".join(f", ts_num({_q(c)}) AS {_num(c)}" for c in sorted(count_cols))
    casts += "".join(f", ts_metric({_q(c)}) AS {_num(c)}" for c in sorted(metric_cols))
    m.execute(f"CREATE TABLE typed_raw AS SELECT *{casts} FROM raw; DROP TABLE raw; "
              "ALTER TABLE typed_raw RENAME TO raw")
    for target in counts:
        col = mapping[target]
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE ts_badsuffix({_q(col)})")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}): cannot parse the size suffix of "
                                   f"{bad[1]!r} (a number, or one ending in K, M, B or T: 70M, 2.8B, 1.4T)")
    for target in [t for t in counts if t != "model_size"]:
        col = mapping[target]
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE ts_blank({_q(col)})")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) is empty ({bad[1]!r}); every row needs "
                                   "it (leave such rows out with --where)")
    for target in [*[t for t in counts if t != "model_size"], *[t for t in _METRICS if t in mapping],
                   *(["weight"] if weight else [])]:
        _check_numbers(m, target, weight if target == "weight" else mapping[target])
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


def _check_numbers(m: duckdb.DuckDBPyConnection, target: str, col: str) -> None:
    """Numbers that parse, are finite, positive where they must be, and metrics within bounds (blanks allowed
    where the target is optional: metrics and weights)."""
    bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} IS NULL AND NOT ts_blank({_q(col)})")
    if bad:
        raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be a number, got {bad[1]!r}")
    bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE NOT isfinite({_num(col)})")
    if bad:
        raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be finite, got {bad[1]!r}")
    if target in (*POSITIVE_TARGETS, "weight", "unique_tokens"):
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} <= 0")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be > 0, got {bad[1]!r}")
    if target == "seed":  # stored as a 32-bit integer
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE {_num(col)} <> round({_num(col)}) OR "
                        f"{_num(col)} NOT BETWEEN 0 AND {2**31 - 1}")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} (seed) must be a whole number in [0, "
                                   f"{2**31 - 1}], got {bad[1]!r}")
    if target in _METRICS:
        bad = _first(m, f"SELECT _line, {_q(col)} FROM raw WHERE abs({_num(col)}) > {MAX_ABS_METRIC}")
        if bad:
            raise TableImportError(f"row {bad[0]}: column {col!r} ({target}) must be within "
                                   f"+-{MAX_ABS_METRIC:g}, got {bad[1]!r}")


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


STAGE_PREFIX = "toolscale-stage-"
_OWNER = "owner.lock"
_HELD: dict[str, int] = {}  # stage folder -> descriptor of its owner lock, held while this process lives


def new_stage() -> Path:
    """A fresh staging folder whose ``owner.lock`` this process holds (``flock``) until it exits.

    First removes the staging folders of processes that died (killed mid-import): a lock nobody holds means the
    owner is gone; a folder without a lock file is removed once it is a minute old.
    """
    sweep_stale_stages()
    folder = Path(tempfile.mkdtemp(prefix=STAGE_PREFIX))
    fd = os.open(folder / _OWNER, os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _HELD[str(folder)] = fd
    return folder


def sweep_stale_stages(root: str | Path | None = None, *, grace_s: float = 60.0) -> list[str]:
    """Remove staging folders under ``root`` (default: the temp folder) left by dead processes; returns them."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(STAGE_PREFIX + "*"):
        if str(folder) in _HELD or not folder.is_dir() or folder.is_symlink():
            continue
        try:
            fd = os.open(folder / _OWNER, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            try:
                if time.time() - folder.stat().st_mtime < grace_s:
                    continue  # being created right now
            except OSError:
                continue
            fd = None
        except OSError:
            continue
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by a live owner: BlockingIOError
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
        except OSError:
            pass
        finally:
            if fd is not None:
                os.close(fd)
    return removed


def release_stage(folder: str) -> None:
    """Remove ``folder`` and drop this process's lock on it."""
    shutil.rmtree(folder, ignore_errors=True)
    fd = _HELD.pop(folder, None)
    if fd is not None:
        os.close(fd)
