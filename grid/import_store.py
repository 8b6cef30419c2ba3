"""Bulk import: a CSV or Parquet table staged by DuckDB's own readers, then stored in one short transaction.

Two phases, so the registry's write lock is held only for the second:

1. :func:`grid.staging.stage_table` reads the file with ``read_csv`` / ``read_parquet`` into a private
   in-memory DuckDB, filters, types and validates every row in SQL and writes two tables (runs, metrics) to a
   private staging DuckDB file: no Python rows, DuckDB's memory capped at 512 MB.
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

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from grid.errors import RegistryConflictError, TableImportError
from grid.models import Conflict, ImportReport, RunSpec
from grid.run_store import RunStore, check_experiment_name
from grid.schema import SCHEMA_VERSION, axis_column, axis_column_ddl
from grid.staging import StagedTable, stage_table

__all__ = ["StagedTable", "stage_table", "ImportStore", "RUN_FIELDS"]

RUN_FIELDS = ("experiment", "model_size", "model_params", "train_tokens", "train_flops", "seed", "split")
"""Stored run columns compared on re-import (with every axis column and every metric score)."""
_SHOWN = 3  # conflicts named in the refusal line


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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
            self._check_owner(experiment)
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
            report = self.store_runs(experiment, staged.axes, "_stage.runs", "_stage.metrics",
                                     heldout=staged.heldout, **kwargs)
            return report.model_copy(update={"notes": list(staged.notes)})
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

    def _check_owner(self, experiment: str) -> None:
        """RegistryConflictError if a staged run id (a user's id, kept verbatim) belongs to another experiment."""
        other = self.con.execute("SELECT s.run_id, r.experiment FROM _s_runs s JOIN runs r USING (run_id) "
                                 "WHERE r.experiment <> ? LIMIT 1", [experiment]).fetchall()
        if other:
            raise RegistryConflictError(f"run id {other[0][0]!r} already belongs to experiment {other[0][1]!r}; run "
                                        "ids are unique in a registry: import into that experiment, or map another "
                                        "id column to run_id; nothing was changed")

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
        # a standard error is a stored value too (fit weights by it): added, changed or dropped is a conflict
        parts.append("SELECT s.run_id, s.benchmark || '/' || s.metric || ' stderr', CAST(m.stderr AS VARCHAR), "
                     "CAST(s.stderr AS VARCHAR) FROM _s_metrics s JOIN (SELECT * FROM metrics WHERE step IS NULL) m "
                     "USING (run_id, benchmark, metric) WHERE m.stderr IS DISTINCT FROM s.stderr")
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
                         + ["recipe = json_merge_patch(runs.recipe, s.recipe)",  # an axis the file lacks stays
                            "metadata = json_merge_patch(runs.metadata, s.metadata)"])
        self.con.execute(f"UPDATE runs SET {sets} FROM _s_runs s WHERE runs.run_id = s.run_id AND "
                         "runs.run_id IN (SELECT run_id FROM _conflicts)")
        self.con.execute("UPDATE metrics SET score = s.score, stderr = s.stderr, n_items = s.n_items, "
                         "benchmark_version = s.version FROM _s_metrics s WHERE metrics.run_id = s.run_id AND "
                         "metrics.benchmark = s.benchmark AND metrics.metric = s.metric AND metrics.step IS NULL AND "
                         "(metrics.score IS DISTINCT FROM s.score OR metrics.stderr IS DISTINCT FROM s.stderr)")

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
