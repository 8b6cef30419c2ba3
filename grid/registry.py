"""The run registry: one DuckDB file, the only code that runs SQL.

DuckDB allows one writing process at a time. Commands open the registry for as
long as they need it and close it; compute jobs never open it (they write result
files, see :mod:`grid.results`). A second process that wants the file while it is
held waits up to ``lock_timeout_s`` (default 30 s, env ``TOOLSCALE_LOCK_TIMEOUT``)
and then gets :class:`RegistryLockedError` naming the holder's PID.

Every multi-row write runs in one transaction: a process killed mid-write leaves
the file as it was before the write.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from grid.models import RUN_STATUSES, TERMINAL_STATUSES, MetricResult, RunRecord, RunResult, RunSpec
from grid.schema import MIGRATIONS, SCHEMA_VERSION, axis_column, axis_column_ddl
from toolscale.errors import ToolscaleError

__all__ = ["Registry", "RegistryError", "RegistryLockedError", "IngestReport", "code_version", "now"]

DEFAULT_LOCK_TIMEOUT_S = 30.0


class RegistryError(ToolscaleError):
    """A registry operation that cannot be done (unknown experiment, newer schema...)."""


class RegistryLockedError(RegistryError):
    """Another process holds the registry file."""


def now() -> datetime:
    """Current UTC time without tzinfo (DuckDB TIMESTAMP)."""
    return datetime.now(UTC).replace(tzinfo=None)


def code_version(root: str | Path | None = None) -> str:
    """The git commit of the code (``+dirty`` when the tree has changes), or ``unknown``."""
    cwd = Path(root) if root else Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, timeout=5)
        return head.stdout.strip()[:12] + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class IngestReport(dict):
    """Counts of an ingest: ``ingested``, ``duplicate``, ``unknown_run``; plus ``problems`` (list of str)."""


_LOCK_PID = re.compile(r"PID (\d+)")


def _connect(path: str, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return duckdb.connect(path, read_only=read_only)
        except duckdb.IOException as err:
            msg = str(err)
            if "lock" not in msg.lower():
                raise RegistryError(f"cannot open registry {path}: {msg.splitlines()[0]}") from None
            if time.monotonic() >= deadline:
                pid = _LOCK_PID.search(msg)
                holder = f"process {pid.group(1)}" if pid else "another process"
                raise RegistryLockedError(
                    f"registry {path} is locked by {holder}; waited {timeout_s:g} s "
                    f"(set TOOLSCALE_LOCK_TIMEOUT to wait longer)") from None
            time.sleep(0.2)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


class Registry:
    """A DuckDB registry file. Use as a context manager; closes on exit.

    Parameters
    ----------
    path : path of the ``.duckdb`` file (created, with its schema, if missing).
    read_only : open without write access (still takes a shared lock).
    lock_timeout_s : seconds to wait for another process to release the file.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False, lock_timeout_s: float | None = None):
        self.path = str(path)
        if read_only and not Path(self.path).exists():
            raise RegistryError(f"registry not found: {self.path} (run `toolscale grid design` or `import-runs` first)")
        if not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        timeout = lock_timeout_s if lock_timeout_s is not None else float(
            os.environ.get("TOOLSCALE_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT_S))
        self.con = _connect(self.path, read_only, timeout)
        self.read_only = read_only
        if not read_only:
            self.migrate()
        else:
            self._check_version()

    # ---- lifecycle -------------------------------------------------------
    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Registry":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing block: rolled back on any exception."""
        self.con.begin()
        try:
            yield
        except BaseException:
            self.con.rollback()
            raise
        self.con.commit()

    def schema_version(self) -> int:
        """Version of the file's schema (0 for an empty file)."""
        has_meta = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_meta'").fetchone()[0]
        if not has_meta:
            return 0
        row = self.con.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _check_version(self) -> None:
        v = self.schema_version()
        if v > SCHEMA_VERSION:
            raise RegistryError(f"registry {self.path} has schema version {v}, newer than this code's "
                                f"{SCHEMA_VERSION}; upgrade toolscale")

    def migrate(self) -> int:
        """Apply the missing migrations in one transaction; returns the new version."""
        self._check_version()
        v = self.schema_version()
        if v == SCHEMA_VERSION:
            return v
        with self.transaction():
            for statements in MIGRATIONS[v:]:
                for sql in statements:
                    self.con.execute(sql)
            self.con.execute("INSERT OR REPLACE INTO schema_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
        return SCHEMA_VERSION

    # ---- experiments -----------------------------------------------------
    def ensure_experiment(self, name: str, *, config: dict | None = None, axes: Sequence[str] = (),
                          simulated: bool = False) -> None:
        """Create the experiment if missing and make sure every axis has its column."""
        with self.transaction():
            for axis in axes:
                self.con.execute(axis_column_ddl(axis))
            exists = self.con.execute("SELECT axes FROM experiments WHERE name = ?", [name]).fetchone()
            if exists is None:
                self.con.execute(
                    "INSERT INTO experiments VALUES (?, ?, ?, ?, ?, ?)",
                    [name, _json(config) if config is not None else None, _json(list(axes)), simulated, now(),
                     SCHEMA_VERSION])
            else:
                known = json.loads(exists[0] or "[]")
                merged = known + [a for a in axes if a not in known]
                self.con.execute("UPDATE experiments SET axes = ?, simulated = simulated OR ? WHERE name = ?",
                                 [_json(merged), simulated, name])
                if config is not None:
                    self.con.execute("UPDATE experiments SET config = ? WHERE name = ?", [_json(config), name])

    def experiments(self) -> list[dict[str, Any]]:
        """Every experiment: name, axes, simulated flag, config (dict or None)."""
        rows = self.con.execute(
            "SELECT name, axes, simulated, config FROM experiments ORDER BY created_at, name").fetchall()
        return [{"name": r[0], "axes": json.loads(r[1] or "[]"), "simulated": bool(r[2]),
                 "config": json.loads(r[3]) if r[3] else None} for r in rows]

    def experiment(self, name: str) -> dict[str, Any]:
        """One experiment; RegistryError listing the known ones otherwise."""
        for e in self.experiments():
            if e["name"] == name:
                return e
        known = ", ".join(e["name"] for e in self.experiments()) or "none"
        raise RegistryError(f"unknown experiment {name!r}; known: {known}")

    # ---- designs and runs ------------------------------------------------
    def add_design(self, design_version: str, experiment: str, summary: dict[str, Any]) -> bool:
        """Record a design; False if this version was already recorded."""
        with self.transaction():
            row = self.con.execute("SELECT 1 FROM designs WHERE design_version = ?", [design_version]).fetchone()
            if row:
                return False
            self.con.execute("INSERT INTO designs VALUES (?, ?, ?, ?, ?)",
                             [design_version, experiment, _json(summary), now(), SCHEMA_VERSION])
            return True

    def designs(self, experiment: str) -> list[dict[str, Any]]:
        """Designs of an experiment, oldest first."""
        rows = self.con.execute("SELECT design_version, summary, created_at FROM designs WHERE experiment = ? "
                                "ORDER BY created_at", [experiment]).fetchall()
        return [{"design_version": r[0], "summary": json.loads(r[1]), "created_at": r[2]} for r in rows]

    def add_runs(self, runs: Sequence[RunSpec], *, source: str = "design", status: str = "pending",
                 code: str | None = None) -> int:
        """Insert planned runs, skipping ids already present; returns how many were new."""
        if status not in RUN_STATUSES:
            raise RegistryError(f"status must be one of {', '.join(RUN_STATUSES)}, got {status!r}")
        code = code or code_version()
        inserted = 0
        with self.transaction():
            axes = sorted({a for r in runs for a in r.recipe})
            for a in axes:
                self.con.execute(axis_column_ddl(a))
            for r in runs:
                inserted += self._insert_run(r, status=status, source=source, code=code)
        return inserted

    def _insert_run(self, r: RunSpec, *, status: str, source: str, code: str) -> bool:
        """Insert one run unless its id exists (inside the caller's transaction); True if inserted."""
        if self.con.execute("SELECT 1 FROM runs WHERE run_id = ?", [r.run_id]).fetchone():
            return False
        cols = ["run_id", "experiment", "design_version", "recipe", "model_size", "model_params", "train_tokens",
                "train_flops", "seed", "status", "source", "metadata", "created_at", "finished_at",
                "schema_version", "split", "code_version"]
        vals: list[Any] = [r.run_id, r.experiment, r.design_version, _json(r.recipe), r.model_size, r.model_params,
                           r.train_tokens, r.train_flops, r.seed, status, source,
                           _json({**r.metadata, "token_multiplier": r.token_multiplier}), now(),
                           now() if status in TERMINAL_STATUSES else None, SCHEMA_VERSION, r.split, code]
        for a, v in r.recipe.items():
            cols.append(f'"{axis_column(a)}"')
            vals.append(float(v))
        self.con.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' for _ in vals)})", vals)
        return True

    _RUN_COLS = ("run_id, experiment, design_version, recipe, model_size, model_params, train_tokens, "
                 "train_flops, seed, status, attempts, job_id, split, error, source, metadata, created_at, "
                 "finished_at")

    def runs(self, experiment: str | None = None, *, status: str | Sequence[str] | None = None,
             split: str | None = None, design_version: str | None = None,
             run_ids: Sequence[str] | None = None) -> list[RunRecord]:
        """Runs matching every given filter, with their metrics, in creation order."""
        where, args = [], []
        if experiment is not None:
            where.append("experiment = ?")
            args.append(experiment)
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            where.append(f"status IN ({', '.join('?' for _ in statuses)})")
            args.extend(statuses)
        if split is not None:
            where.append("split = ?")
            args.append(split)
        if design_version is not None:
            where.append("design_version = ?")
            args.append(design_version)
        if run_ids is not None:
            ids = list(run_ids) or [""]
            where.append(f"run_id IN ({', '.join('?' for _ in ids)})")
            args.extend(ids)
        sql = f"SELECT {self._RUN_COLS} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        rows = self.con.execute(sql + " ORDER BY created_at, run_id", args).fetchall()
        metrics = self._metrics_by_run([r[0] for r in rows])
        out = []
        for r in rows:
            out.append(RunRecord(
                run_id=r[0], experiment=r[1], design_version=r[2], recipe=json.loads(r[3]), model_size=r[4],
                model_params=r[5], train_tokens=r[6], train_flops=r[7], seed=r[8], status=r[9], attempts=r[10],
                job_id=r[11], split=r[12] or "fit", error=r[13], source=r[14], metadata=json.loads(r[15] or "{}"),
                created_at=r[16], finished_at=r[17], metrics=metrics.get(r[0], {})))
        return out

    def _metrics_by_run(self, run_ids: list[str]) -> dict[str, dict[str, float]]:
        if not run_ids:
            return {}
        rows = self.con.execute("SELECT run_id, benchmark, metric, score FROM metrics").fetchall()
        wanted = set(run_ids)
        out: dict[str, dict[str, float]] = {}
        for run_id, bench, metric, score in rows:
            if run_id in wanted:
                out.setdefault(run_id, {})[f"{bench}/{metric}"] = score
        return out

    def metrics(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """Every metric row (joined to its run's experiment)."""
        sql = ("SELECT m.run_id, r.experiment, m.benchmark, m.metric, m.benchmark_version, m.score, m.stderr, "
               "m.n_items, m.higher_is_better FROM metrics m JOIN runs r USING (run_id)")
        args: list[Any] = []
        if experiment is not None:
            sql += " WHERE r.experiment = ?"
            args.append(experiment)
        cols = ["run_id", "experiment", "benchmark", "metric", "version", "score", "stderr", "n_items",
                "higher_is_better"]
        return [dict(zip(cols, r)) for r in self.con.execute(sql + " ORDER BY m.run_id, m.benchmark", args).fetchall()]

    def set_status(self, run_ids: Sequence[str], status: str, *, job_id: str | None = None,
                   error: str | None = None, new_attempt: bool = False) -> int:
        """Move runs to ``status``; ``new_attempt`` counts a submission. Returns rows changed."""
        if status not in RUN_STATUSES:
            raise RegistryError(f"status must be one of {', '.join(RUN_STATUSES)}, got {status!r}")
        changed = 0
        with self.transaction():
            for rid in run_ids:
                sets = ["status = ?"]
                args: list[Any] = [status]
                if job_id is not None:
                    sets.append("job_id = ?")
                    args.append(job_id)
                if error is not None or status in ("pending", "submitted", "running", "done"):
                    sets.append("error = ?")
                    args.append(error)
                if new_attempt:
                    sets.append("attempts = attempts + 1")
                    sets.append("submitted_at = ?")
                    args.append(now())
                if status in ("done", "failed", "cancelled"):
                    sets.append("finished_at = ?")
                    args.append(now())
                args.append(rid)
                cur = self.con.execute(f"UPDATE runs SET {', '.join(sets)} WHERE run_id = ? RETURNING run_id", args)
                changed += len(cur.fetchall())
                self.con.execute("INSERT INTO run_events VALUES (?, ?, ?, ?, ?)",
                                 [rid, status, error or job_id, now(), SCHEMA_VERSION])
        return changed

    def mark_submitted(self, job_ids: dict[str, str]) -> int:
        """Record one submission per run (``run_id -> scheduler job id``) in one transaction.

        Each run becomes ``submitted`` with its job id, ``attempts + 1`` and its error
        cleared; a ``submitted`` event is logged. Returns rows changed.
        """
        changed = 0
        stamp = now()
        with self.transaction():
            for rid, job_id in job_ids.items():
                cur = self.con.execute(
                    "UPDATE runs SET status = 'submitted', job_id = ?, error = NULL, attempts = attempts + 1, "
                    "submitted_at = ?, finished_at = NULL WHERE run_id = ? RETURNING run_id", [job_id, stamp, rid])
                changed += len(cur.fetchall())
                self.con.execute("INSERT INTO run_events VALUES (?, 'submitted', ?, ?, ?)",
                                 [rid, job_id, stamp, SCHEMA_VERSION])
        return changed

    def set_statuses(self, changes: dict[str, tuple[str, str | None]]) -> int:
        """Move many runs at once (``run_id -> (status, error or None)``) in one transaction.

        Terminal states (done, failed, cancelled) set ``finished_at``; an event is logged
        per run. Returns rows changed.
        """
        for status, _ in changes.values():
            if status not in RUN_STATUSES:
                raise RegistryError(f"status must be one of {', '.join(RUN_STATUSES)}, got {status!r}")
        changed = 0
        stamp = now()
        with self.transaction():
            for rid, (status, error) in changes.items():
                finished = stamp if status in ("done", "failed", "cancelled") else None
                cur = self.con.execute(
                    "UPDATE runs SET status = ?, error = coalesce(?, error), finished_at = ? WHERE run_id = ? "
                    "RETURNING run_id", [status, error, finished, rid])
                changed += len(cur.fetchall())
                self.con.execute("INSERT INTO run_events VALUES (?, ?, ?, ?, ?)",
                                 [rid, status, error, stamp, SCHEMA_VERSION])
        return changed

    def events(self, run_id: str) -> list[tuple[str, str | None]]:
        """(event, detail) of a run, oldest first."""
        return [tuple(r) for r in self.con.execute(
            "SELECT event, detail FROM run_events WHERE run_id = ? ORDER BY event_at", [run_id]).fetchall()]

    def status_counts(self, experiment: str | None = None) -> dict[str, dict[str, int]]:
        """``{experiment: {status: count}}`` with every status present (zeros included)."""
        sql = "SELECT experiment, status, count(*) FROM runs"
        args: list[Any] = []
        if experiment is not None:
            sql += " WHERE experiment = ?"
            args.append(experiment)
        out: dict[str, dict[str, int]] = {}
        for exp, status, n in self.con.execute(sql + " GROUP BY experiment, status", args).fetchall():
            out.setdefault(exp, {s: 0 for s in RUN_STATUSES})[status] = n
        return out

    def last_failures(self, n: int = 5, experiment: str | None = None) -> list[dict[str, Any]]:
        """The ``n`` most recent failed runs with the tail of their error."""
        sql = "SELECT run_id, experiment, attempts, finished_at, error FROM runs WHERE status = 'failed'"
        args: list[Any] = []
        if experiment is not None:
            sql += " AND experiment = ?"
            args.append(experiment)
        rows = self.con.execute(sql + " ORDER BY finished_at DESC NULLS LAST LIMIT ?", [*args, n]).fetchall()
        return [{"run_id": r[0], "experiment": r[1], "attempts": r[2], "finished_at": str(r[3]) if r[3] else None,
                 "error": r[4]} for r in rows]

    # ---- results ---------------------------------------------------------
    def ingest(self, results: Sequence[tuple[RunResult, str, str]]) -> IngestReport:
        """Ingest ``(result, content_hash, path)`` triples in one transaction.

        A result whose content hash was ingested before is skipped (idempotent); one
        whose run is unknown is reported and skipped. Done runs get their metrics and
        measured N, D, FLOPs; failed runs their error tail. Set-based: a few statements
        per batch, not per file (300 results in well under a second).
        """
        report = IngestReport(ingested=0, duplicate=0, unknown_run=0, problems=[])
        if not results:
            return report
        with self.transaction():
            seen = self._existing("ingested_files", "content_hash", [d for _, d, _ in results])
            known = self._existing("runs", "run_id", [r.run_id for r, _, _ in results])
            todo: list[tuple[RunResult, str, str]] = []
            for result, digest, path in results:
                if digest in seen:
                    report["duplicate"] += 1
                    continue
                if result.run_id not in known:
                    report["unknown_run"] += 1
                    report["problems"].append(f"{path}: unknown run {result.run_id}")
                    continue
                seen.add(digest)
                todo.append((result, digest, path))
            last = {r.run_id: (r, d, p) for r, d, p in todo}  # the same run twice in a batch: the last one wins
            self._apply_results(list(last.values()))
            earlier = [(d, r.run_id, p, now(), SCHEMA_VERSION) for r, d, p in todo if last[r.run_id][1] != d]
            if earlier:
                self._values("INSERT INTO ingested_files VALUES {values}",
                             "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)", earlier)
            report["ingested"] = len(todo)
        return report

    _CHUNK = 400

    def _existing(self, table: str, column: str, values: Sequence[str]) -> set[str]:
        out: set[str] = set()
        values = list(dict.fromkeys(values))
        for i in range(0, len(values), self._CHUNK):
            part = values[i:i + self._CHUNK]
            out.update(r[0] for r in self.con.execute(
                f"SELECT {column} FROM {table} WHERE {column} IN ({', '.join('?' for _ in part)})", part).fetchall())
        return out

    def _values(self, sql: str, row_sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` with ``{values}`` replaced by chunks of ``rows`` as a multi-row VALUES list."""
        for i in range(0, len(rows), self._CHUNK):
            part = rows[i:i + self._CHUNK]
            self.con.execute(sql.format(values=", ".join(row_sql for _ in part)), [x for row in part for x in row])

    def _apply_results(self, todo: Sequence[tuple[RunResult, str, str]]) -> None:
        """Apply results of distinct runs, a few statements in all.

        Done runs get status, finish time, measured N, D, FLOPs, metadata and metrics;
        failed runs their error tail; every result an event and its ingested-file row.
        """
        stamp = now()

        def finished(r: RunResult) -> datetime:
            return r.finished_at.astimezone(UTC).replace(tzinfo=None) if r.finished_at.tzinfo else r.finished_at

        failed = [(r.run_id, r.error, finished(r), r.job_id) for r, _, _ in todo if r.status == "failed"]
        if failed:
            self._values("UPDATE runs SET status = 'failed', error = v.error, finished_at = v.fin, "
                         "job_id = coalesce(v.job_id, runs.job_id) FROM (VALUES {values}) "
                         "v(run_id, error, fin, job_id) WHERE runs.run_id = v.run_id",
                         "(?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::VARCHAR)", failed)
        done = []
        for r, _, _ in todo:
            if r.status == "failed":
                continue
            t = r.train
            n = t.params if t else None
            flops = t.train_flops if t else None
            if t and (r.extra or {}).get("param_count") == "nonembedding" and t.params_nonembedding:
                n, flops = t.params_nonembedding, 6.0 * t.params_nonembedding * t.train_tokens  # the design's N
            done.append((r.run_id, finished(r), r.job_id, n, t.train_tokens if t else None, flops,
                         _json({"dataset_id": r.dataset_id, "train": t.model_dump() if t else None, **r.extra})))
        if done:
            self._values("UPDATE runs SET status = 'done', error = NULL, finished_at = v.fin, "
                         "job_id = coalesce(v.job_id, runs.job_id), "
                         "model_params = coalesce(v.n, runs.model_params), "
                         "train_tokens = coalesce(v.d, runs.train_tokens), "
                         "train_flops = coalesce(v.c, runs.train_flops), "
                         "metadata = json_merge_patch(coalesce(runs.metadata, '{{}}'), v.patch) "
                         "FROM (VALUES {values}) v(run_id, fin, job_id, n, d, c, patch) WHERE runs.run_id = v.run_id",
                         "(?::VARCHAR, ?::TIMESTAMP, ?::VARCHAR, ?::DOUBLE, ?::DOUBLE, ?::DOUBLE, ?::VARCHAR)", done)
        metrics: dict[tuple[str, str, str], list[Any]] = {}
        for r, _, _ in todo:
            if r.status == "failed":
                continue
            for m in r.metrics:  # a metric listed twice: the last one wins, as with one INSERT OR REPLACE each
                metrics[(r.run_id, m.benchmark, m.metric)] = [
                    r.run_id, m.benchmark, m.metric, m.version, m.score, m.stderr, m.n_items, m.higher_is_better,
                    stamp, SCHEMA_VERSION]
        if metrics:
            self._values("INSERT OR REPLACE INTO metrics VALUES {values}",
                         "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::DOUBLE, ?::DOUBLE, ?::INTEGER, "
                         "?::BOOLEAN, ?::TIMESTAMP, ?::INTEGER)", list(metrics.values()))
        events = [(r.run_id, r.status, (r.error or "")[-500:] if r.status == "failed" else None, stamp, SCHEMA_VERSION)
                  for r, _, _ in todo]
        self._values("INSERT INTO run_events VALUES {values}",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)", events)
        self._values("INSERT INTO ingested_files VALUES {values}",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)",
                     [(d, r.run_id, p, stamp, SCHEMA_VERSION) for r, d, p in todo])

    def _put_metrics(self, run_id: str, metrics: Sequence[MetricResult]) -> None:
        for m in metrics:
            self.con.execute(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, m.benchmark, m.metric, m.version, m.score, m.stderr, m.n_items, m.higher_is_better,
                 now(), SCHEMA_VERSION])

    def add_metrics(self, run_id: str, metrics: Sequence[MetricResult]) -> None:
        """Upsert metrics of one run."""
        with self.transaction():
            self._put_metrics(run_id, metrics)

    def import_runs(self, experiment: str, axes: Sequence[str], runs: Sequence[RunSpec],
                    metrics: Sequence[Sequence[MetricResult]], *, simulated: bool = False,
                    source: str = "import") -> int:
        """Store finished runs produced elsewhere (or simulated) with their metrics, all or nothing."""
        if len(runs) != len(metrics):
            raise RegistryError(f"import_runs: {len(runs)} runs but {len(metrics)} metric lists")
        self.ensure_experiment(experiment, axes=axes, simulated=simulated)
        code = code_version()
        with self.transaction():
            new = 0
            for r, ms in zip(runs, metrics):
                new += self._insert_run(r, status="done", source=source, code=code)
                self._put_metrics(r.run_id, ms)
        return new

    # ---- datasets, tools -------------------------------------------------
    def save_dataset(self, dataset_id: str, *, experiment: str | None, recipe: dict, seed: int, path: str,
                     manifest: dict) -> None:
        """Upsert a dataset's manifest (synth/ and probes/ both write it)."""
        with self.transaction():
            self.con.execute("INSERT OR REPLACE INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                             [dataset_id, experiment, _json(recipe), seed, path, _json(manifest), now(),
                              SCHEMA_VERSION])

    def dataset(self, dataset_id: str) -> dict[str, Any] | None:
        """A dataset row, or None."""
        r = self.con.execute("SELECT dataset_id, experiment, recipe, seed, path, manifest FROM datasets "
                             "WHERE dataset_id = ?", [dataset_id]).fetchone()
        if r is None:
            return None
        return {"dataset_id": r[0], "experiment": r[1], "recipe": json.loads(r[2] or "{}"), "seed": r[3],
                "path": r[4], "manifest": json.loads(r[5] or "{}")}

    def save_tool_docs(self, server: str, docs: Sequence[dict[str, Any]], quarantined: Sequence[tuple[str | None, str]] = ()) -> None:
        """Replace a server's tool docs and quarantine entries (one collection)."""
        with self.transaction():
            self.con.execute("DELETE FROM tool_docs WHERE server = ?", [server])
            self.con.execute("DELETE FROM quarantine WHERE server = ?", [server])
            for d in docs:
                self.con.execute("INSERT INTO tool_docs VALUES (?, ?, ?, ?, ?)",
                                 [server, d["name"], _json(d), now(), SCHEMA_VERSION])
            for tool, reason in quarantined:
                self.con.execute("INSERT INTO quarantine VALUES (?, ?, ?, ?, ?)",
                                 [server, tool, reason, now(), SCHEMA_VERSION])

    def tool_docs(self, server: str | None = None) -> list[dict[str, Any]]:
        """Stored tool docs (``{"server", **doc}``), by server and name."""
        sql, args = "SELECT server, doc FROM tool_docs", []
        if server is not None:
            sql += " WHERE server = ?"
            args.append(server)
        return [{"server": s, **json.loads(d)} for s, d in self.con.execute(sql + " ORDER BY server, name", args).fetchall()]

    def quarantine(self) -> list[dict[str, Any]]:
        """Quarantined servers and tools with their reasons."""
        rows = self.con.execute("SELECT server, tool, reason FROM quarantine ORDER BY server, tool").fetchall()
        return [{"server": s, "tool": t, "reason": r} for s, t, r in rows]

    # ---- fits and allocations -------------------------------------------
    def save_fit(self, *, experiment: str, benchmark: str, metric: str, law: str, converged: bool, n_points: int,
                 data_hash: str, payload: dict[str, Any]) -> str:
        """Store a fit (``payload`` is the FitResult as JSON); returns its id."""
        fit_id = "f-" + uuid.uuid4().hex[:12]
        with self.transaction():
            self.con.execute("INSERT INTO fits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [fit_id, experiment, benchmark, metric, law, converged, n_points, data_hash,
                              _json(payload), now(), SCHEMA_VERSION])
        return fit_id

    def fits(self, experiment: str | None = None, benchmark: str | None = None) -> list[dict[str, Any]]:
        """Stored fits, newest first, with their payloads."""
        where, args = [], []
        if experiment is not None:
            where.append("experiment = ?")
            args.append(experiment)
        if benchmark is not None:
            where.append("benchmark = ?")
            args.append(benchmark)
        sql = ("SELECT fit_id, experiment, benchmark, metric, law, converged, n_points, data_hash, payload, "
               "created_at FROM fits")
        if where:
            sql += " WHERE " + " AND ".join(where)
        cols = ["fit_id", "experiment", "benchmark", "metric", "law", "converged", "n_points", "data_hash",
                "payload", "created_at"]
        out = []
        for r in self.con.execute(sql + " ORDER BY created_at DESC", args).fetchall():
            d = dict(zip(cols, r))
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

    def save_allocation(self, *, experiment: str, benchmark: str, budget: float, unit: str, fit_id: str | None,
                        payload: dict[str, Any]) -> str:
        """Store an allocation plan; returns its id."""
        alloc_id = "a-" + uuid.uuid4().hex[:12]
        with self.transaction():
            self.con.execute("INSERT INTO allocations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             [alloc_id, experiment, benchmark, budget, unit, fit_id, _json(payload), now(),
                              SCHEMA_VERSION])
        return alloc_id

    def allocations(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """Stored allocation plans, newest first."""
        sql, args = "SELECT allocation_id, experiment, benchmark, budget, unit, fit_id, payload FROM allocations", []
        if experiment is not None:
            sql += " WHERE experiment = ?"
            args.append(experiment)
        cols = ["allocation_id", "experiment", "benchmark", "budget", "unit", "fit_id", "payload"]
        out = []
        for r in self.con.execute(sql + " ORDER BY created_at DESC", args).fetchall():
            d = dict(zip(cols, r))
            d["payload"] = json.loads(d["payload"])
            out.append(d)
        return out

    # ---- export ----------------------------------------------------------
    def export_rows(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """One flat row per run: ids, axes (``axis_*``), N, D, FLOPs, status, split, and ``bench/metric`` columns."""
        out = []
        for r in self.runs(experiment):
            row: dict[str, Any] = {"run_id": r.run_id, "experiment": r.experiment, "design_version": r.design_version,
                                   "model_size": r.model_size, "model_params": r.model_params,
                                   "train_tokens": r.train_tokens, "train_flops": r.train_flops, "seed": r.seed,
                                   "status": r.status, "split": r.split, "source": r.source}
            row.update({axis_column(k): v for k, v in r.recipe.items()})
            row.update(r.metrics)
            out.append(row)
        return out
