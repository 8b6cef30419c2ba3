"""The run store: experiments, designs, the run lifecycle, metrics, ingest of result files, export.

A run goes ``pending -> submitted -> running -> done | failed | cancelled``; every
move is logged in ``run_events``. :meth:`RunStore.ingest` applies result files
(:mod:`grid.results`) idempotently, keyed by their content hash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from grid.connection import Connection, code_version, now
from grid.errors import ExperimentNameError, RegistryConflictError, RegistryError, UnknownNameError
from grid.models import (RUN_STATUSES, TERMINAL_STATUSES, Conflict, ExperimentRecord, IngestReport, MetricResult,
                         RunRecord, RunResult, RunSpec)
from grid.schema import SCHEMA_VERSION, axis_column, axis_column_ddl
from toolscale.config import training_flops

__all__ = ["RunStore", "check_experiment_name"]

EXPERIMENT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
"""What a new experiment may be called: the config's rule (a letter or digit, then letters, digits, ``_.-``), at
most 100 characters. It becomes part of file names (exports, reports, launch folders)."""


def check_experiment_name(name: str) -> str:
    """``name``, or :class:`ExperimentNameError` (exit 2) saying what is wrong with it."""
    if not isinstance(name, str) or not EXPERIMENT_NAME.fullmatch(name):
        shown = repr(name[:40] + ("..." if len(name) > 40 else "")) if isinstance(name, str) else repr(name)
        size = f" ({len(name):,} characters)" if isinstance(name, str) and len(name) > 100 else ""
        raise ExperimentNameError(f"experiment name {shown}{size} is not allowed: use 1-100 letters, digits, "
                                  "'_', '.' or '-', starting with a letter or digit")
    return name

_SHOWN = 3
"""Conflicts named in a refusal line (and kept in a report)."""


class RunStore(Connection):
    """Experiments, designs, runs and their metrics in a registry file (see :class:`~grid.connection.Connection`)."""

    # ---- experiments -----------------------------------------------------
    def ensure_experiment(self, name: str, *, config: dict | None = None, axes: Sequence[str] = (),
                          simulated: bool = False) -> None:
        """Create the experiment if missing and make sure every axis has its column."""
        check_experiment_name(name)
        with self.transaction():
            for axis in axes:
                self.con.execute(axis_column_ddl(axis))
            exists = self.con.execute("SELECT axes FROM experiments WHERE name = ?", [name]).fetchone()
            if exists is None:
                self.con.execute(
                    "INSERT INTO experiments VALUES (?, ?, ?, ?, ?, ?)",
                    [name, self._json(config) if config is not None else None, self._json(list(axes)), simulated, now(),
                     SCHEMA_VERSION])
            else:
                known = json.loads(exists[0] or "[]")
                merged = known + [a for a in axes if a not in known]
                self.con.execute("UPDATE experiments SET axes = ?, simulated = simulated OR ? WHERE name = ?",
                                 [self._json(merged), simulated, name])
                if config is not None:
                    self.con.execute("UPDATE experiments SET config = ? WHERE name = ?", [self._json(config), name])

    def experiments(self) -> list[ExperimentRecord]:
        """Every experiment (name, axes, simulated flag, config), oldest first."""
        rows = self.con.execute(
            "SELECT name, axes, simulated, config FROM experiments ORDER BY created_at, name").fetchall()
        return [ExperimentRecord(name=r[0], axes=json.loads(r[1] or "[]"), simulated=bool(r[2]),
                                 config=json.loads(r[3]) if r[3] else None) for r in rows]

    def experiment(self, name: str) -> ExperimentRecord:
        """One experiment; RegistryError listing the known ones otherwise."""
        experiments = self.experiments()
        for e in experiments:
            if e.name == name:
                return e
        known = ", ".join(e.name for e in experiments) or "none"
        raise UnknownNameError(f"unknown experiment {name!r}; known: {known}")

    # ---- designs and runs ------------------------------------------------
    def add_design(self, design_version: str, experiment: str, summary: dict[str, Any]) -> bool:
        """Record a design; False if this version was already recorded."""
        with self.transaction():
            row = self.con.execute("SELECT 1 FROM designs WHERE design_version = ?", [design_version]).fetchone()
            if row:
                return False
            self.con.execute("INSERT INTO designs VALUES (?, ?, ?, ?, ?)",
                             [design_version, experiment, self._json(summary), now(), SCHEMA_VERSION])
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
            seen = self._existing("runs", "run_id", [r.run_id for r in runs])  # runs has no key: checked here
            for r in runs:
                if r.run_id in seen:
                    continue
                seen.add(r.run_id)
                inserted += self._insert_run(r, status=status, source=source, code=code)
        return inserted

    def _insert_run(self, r: RunSpec, *, status: str, source: str, code: str) -> bool:
        """Insert one run whose id the caller checked is new (inside the caller's transaction); True."""
        cols = ["run_id", "experiment", "design_version", "recipe", "model_size", "model_params", "train_tokens",
                "train_flops", "seed", "status", "source", "metadata", "created_at", "finished_at",
                "schema_version", "split", "code_version"]
        vals: list[Any] = [r.run_id, r.experiment, r.design_version, self._json(r.recipe), r.model_size, r.model_params,
                           r.train_tokens, r.train_flops, r.seed, status, source,
                           self._json({**r.metadata, "token_multiplier": r.token_multiplier}), now(),
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
        where, args = self._where(
            experiment=experiment, status=[status] if isinstance(status, str) else status, split=split,
            design_version=design_version, run_id=list(run_ids) if run_ids is not None else None)
        rows = self.con.execute(f"SELECT {self._RUN_COLS} FROM runs{where} ORDER BY created_at, run_id",
                                args).fetchall()
        metrics, stderrs, checkpoints = self._metrics_by_run([r[0] for r in rows])
        out = []
        for r in rows:
            out.append(RunRecord(
                run_id=r[0], experiment=r[1], design_version=r[2], recipe=json.loads(r[3]), model_size=r[4],
                model_params=r[5], train_tokens=r[6], train_flops=r[7], seed=r[8], status=r[9], attempts=r[10],
                job_id=r[11], split=r[12] or "fit", error=r[13], source=r[14], metadata=json.loads(r[15] or "{}"),
                created_at=r[16], finished_at=r[17], metrics=metrics.get(r[0], {}),
                stderrs=stderrs.get(r[0], {}), checkpoints=checkpoints.get(r[0], {})))
        return out

    def _metrics_by_run(self, run_ids: list[str]) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]],
                                                           dict[str, dict[int, dict[str, float]]]]:
        """``(run values, their stderrs, checkpoint values)`` of ``run_ids``: ``run -> key -> score``, ``run -> key
        -> stderr`` (where one is stored) and ``run -> step -> key -> score``."""
        if not run_ids:
            return {}, {}, {}
        rows = self.con.execute("SELECT run_id, benchmark, metric, score, stderr, step FROM metrics").fetchall()
        wanted = set(run_ids)
        out: dict[str, dict[str, float]] = {}
        err: dict[str, dict[str, float]] = {}
        ckpt: dict[str, dict[int, dict[str, float]]] = {}
        for run_id, bench, metric, score, stderr, step in rows:
            if run_id not in wanted:
                continue
            if step is not None:
                ckpt.setdefault(run_id, {}).setdefault(int(step), {})[f"{bench}/{metric}"] = score
                continue
            out.setdefault(run_id, {})[f"{bench}/{metric}"] = score
            if stderr is not None:
                err.setdefault(run_id, {})[f"{bench}/{metric}"] = stderr
        return out, err, ckpt

    def metrics(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """Every metric row (joined to its run's experiment)."""
        where, args = self._where(**{"r.experiment": experiment})
        sql = ("SELECT m.run_id, r.experiment, m.benchmark, m.metric, m.benchmark_version, m.score, m.stderr, "
               "m.n_items, m.higher_is_better, m.step FROM metrics m JOIN runs r USING (run_id)" + where)
        cols = ["run_id", "experiment", "benchmark", "metric", "version", "score", "stderr", "n_items",
                "higher_is_better", "step"]
        return [dict(zip(cols, r)) for r in self.con.execute(sql + " ORDER BY m.run_id, m.step NULLS FIRST, "
                                                                   "m.benchmark", args).fetchall()]

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
        where, args = self._where(experiment=experiment)
        out: dict[str, dict[str, int]] = {}
        sql = f"SELECT experiment, status, count(*) FROM runs{where} GROUP BY experiment, status"
        for exp, status, n in self.con.execute(sql, args).fetchall():
            out.setdefault(exp, {s: 0 for s in RUN_STATUSES})[status] = n
        return out

    def last_failures(self, n: int = 5, experiment: str | None = None) -> list[dict[str, Any]]:
        """The ``n`` most recent failed runs with the tail of their error."""
        where, args = self._where(status="failed", experiment=experiment)
        rows = self.con.execute(f"SELECT run_id, experiment, attempts, finished_at, error FROM runs{where} "
                                "ORDER BY finished_at DESC NULLS LAST LIMIT ?", [*args, n]).fetchall()
        return [{"run_id": r[0], "experiment": r[1], "attempts": r[2], "finished_at": str(r[3]) if r[3] else None,
                 "error": r[4]} for r in rows]

    # ---- results ---------------------------------------------------------
    def ingest(self, results: Sequence[tuple[RunResult, str, str]], *,
               on_conflict: Literal["refuse", "skip", "update"] = "skip") -> IngestReport:
        """Ingest ``(result, content_hash, path)`` triples in one transaction.

        A result whose content hash was ingested before is skipped (idempotent); one
        whose run is unknown is reported and skipped. Done runs get their metrics and
        measured N, D, FLOPs; failed runs their error tail. Set-based: a few statements
        per batch, not per file (300 results in well under a second).

        A result that would change a stored value (a score, or a done run's status to failed) is a conflict,
        as in ``import-runs``: ``on_conflict="refuse"`` raises :class:`RegistryConflictError` (nothing
        changed), ``"skip"`` leaves those results out and lists them in ``problems``, ``"update"`` applies
        them, keeps the old values in ``run_history`` and marks the experiments' fits stale.
        """
        if not results:
            return IngestReport()
        duplicate, unknown, problems = 0, 0, []
        with self.transaction():
            seen = self._existing("ingested_files", "content_hash", [d for _, d, _ in results])
            known = self._existing("runs", "run_id", [r.run_id for r, _, _ in results])
            todo: list[tuple[RunResult, str, str]] = []
            for result, digest, path in results:
                if digest in seen:
                    duplicate += 1
                    continue
                if result.run_id not in known:
                    unknown += 1
                    problems.append(f"{path}: unknown run {result.run_id}")
                    continue
                seen.add(digest)
                todo.append((result, digest, path))
            last = {r.run_id: (r, d, p) for r, d, p in todo}  # the same run twice in a batch: the last one wins
            conflicts = self._result_conflicts([r for r, _, _ in last.values()])
            # a run launched again (submitted or running) is expected to report anew: its earlier
            # values go to run_history and its fits become stale, whatever on_conflict says
            live = self._live_runs(sorted({c.run_id for c in conflicts}))
            relaunched = [c for c in conflicts if c.run_id in live]
            conflicts = [c for c in conflicts if c.run_id not in live]
            stale = self._on_conflicts(relaunched, "update", last)
            stale += self._on_conflicts(conflicts, on_conflict, last)
            if on_conflict == "skip" and conflicts:
                skipped = {c.run_id for c in conflicts}
                for r, _, p in last.values():
                    if r.run_id in skipped:
                        what = "; ".join(f"{c.column}: {c.old} -> {c.new}" for c in conflicts if c.run_id == r.run_id)
                        problems.append(f"{p}: would change stored values of run {r.run_id} ({what}); skipped "
                                        "(toolscale ingest --update applies it)")
                todo = [t for t in todo if t[0].run_id not in skipped]
                last = {k: v for k, v in last.items() if k not in skipped}
            self._apply_results(list(last.values()))
            earlier = [(d, r.run_id, p, now(), SCHEMA_VERSION) for r, d, p in todo if last[r.run_id][1] != d]
            if earlier:
                self._values("INSERT INTO ingested_files VALUES {values}",
                             "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)", earlier)
        applied = {c.run_id for c in relaunched} | ({c.run_id for c in conflicts} if on_conflict == "update" else set())
        return IngestReport(ingested=len(todo), duplicate=duplicate, unknown_run=unknown, problems=problems,
                            conflicts=len(conflicts), updated_runs=len(applied), stale_fits=stale,
                            conflict_examples=conflicts[:_SHOWN])

    def _live_runs(self, run_ids: Sequence[str]) -> set[str]:
        """Those of ``run_ids`` that are ``submitted`` or ``running`` (launched again after an earlier result)."""
        if not run_ids:
            return set()
        where, args = self._where(run_id=list(run_ids))
        return {rid for (rid,) in self.con.execute(
            f"SELECT run_id FROM runs{where} AND status IN ('submitted', 'running')", args).fetchall()}

    def _result_conflicts(self, results: Sequence[RunResult]) -> list[Conflict]:
        """The stored values ``results`` would change: differing scores, and done runs reported failed."""
        ids = [r.run_id for r in results]
        stored: dict[tuple[str, str, str, int | None], float | None] = {}
        status: dict[str, str] = {}
        for i in range(0, len(ids), self._CHUNK):
            where, args = self._where(run_id=ids[i:i + self._CHUNK])
            for run_id, bench, metric, score, step in self.con.execute(
                    f"SELECT run_id, benchmark, metric, score, step FROM metrics{where}", args).fetchall():
                stored[(run_id, bench, metric, step)] = score
            status.update(self.con.execute(f"SELECT run_id, status FROM runs{where}", args).fetchall())
        out: list[Conflict] = []
        for r in results:
            if r.status == "failed":
                if status.get(r.run_id) == "done":
                    out.append(Conflict(run_id=r.run_id, column="status", old="done", new="failed"))
                continue
            for m in {(m.benchmark, m.metric, m.step): m for m in r.metrics}.values():
                key = (r.run_id, m.benchmark, m.metric, m.step)
                if key in stored and stored[key] != m.score:
                    at = "" if m.step is None else f"@{m.step}"
                    out.append(Conflict(run_id=r.run_id, column=f"{m.benchmark}/{m.metric}{at}",
                                        old=None if stored[key] is None else str(stored[key]), new=str(m.score)))
        return out

    def _on_conflicts(self, conflicts: list[Conflict], on_conflict: str, last: dict) -> int:
        """Refuse, or (``update``) log the old values to ``run_history`` and mark fits stale; stale fits."""
        if not conflicts or on_conflict == "skip":
            return 0
        if on_conflict == "refuse":
            shown = "; ".join(f"run {c.run_id} {c.column}: {c.old} -> {c.new}" for c in conflicts[:_SHOWN])
            more = f" and {len(conflicts) - _SHOWN} more" if len(conflicts) > _SHOWN else ""
            raise RegistryConflictError(
                f"{len(conflicts)} stored value{'s' if len(conflicts) > 1 else ''} would change ({shown}{more}); "
                "nothing was changed. Pass --update to apply them (the old values are kept in the run_history "
                "table)")
        stamp = now()
        self._values("INSERT INTO run_history VALUES {values}",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::VARCHAR, ?::INTEGER)",
                     [(c.run_id, c.column, c.old, c.new, stamp, "ingest", SCHEMA_VERSION) for c in conflicts])
        runs = sorted({c.run_id for c in conflicts})
        where, args = self._where(run_id=runs)
        experiments = sorted({e for (e,) in self.con.execute(f"SELECT DISTINCT experiment FROM runs{where}",
                                                             args).fetchall()})
        where, args = self._where(experiment=experiments)
        reason = f"ingest changed {len(conflicts)} stored values at {stamp:%Y-%m-%d %H:%M:%S} UTC"
        return len(self.con.execute(f"UPDATE fits SET stale_reason = ?{where} AND stale_reason IS NULL "
                                    "RETURNING fit_id", [reason, *args]).fetchall())

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
                # the design's N: the non-embedding count; FLOPs as the run counted them (attention included
                # since train_flops_6nd exists beside it)
                n = t.params_nonembedding
                flops = t.train_flops if t.train_flops_6nd is not None else training_flops(n, t.train_tokens)
            done.append((r.run_id, finished(r), r.job_id, n, t.train_tokens if t else None, flops,
                         self._json({"dataset_id": r.dataset_id, "train": t.model_dump() if t else None, **r.extra})))
        if done:
            self._values("UPDATE runs SET status = 'done', error = NULL, finished_at = v.fin, "
                         "job_id = coalesce(v.job_id, runs.job_id), "
                         "model_params = coalesce(v.n, runs.model_params), "
                         "train_tokens = coalesce(v.d, runs.train_tokens), "
                         "train_flops = coalesce(v.c, runs.train_flops), "
                         "metadata = json_merge_patch(coalesce(runs.metadata, '{{}}'), v.patch) "
                         "FROM (VALUES {values}) v(run_id, fin, job_id, n, d, c, patch) WHERE runs.run_id = v.run_id",
                         "(?::VARCHAR, ?::TIMESTAMP, ?::VARCHAR, ?::DOUBLE, ?::DOUBLE, ?::DOUBLE, ?::VARCHAR)", done)
        metrics: dict[tuple[str, str, str, int | None], list[Any]] = {}
        for r, _, _ in todo:
            if r.status == "failed":
                continue
            for m in r.metrics:  # a metric listed twice: the last one wins, as with one INSERT OR REPLACE each
                metrics[(r.run_id, m.benchmark, m.metric, m.step)] = [
                    r.run_id, m.benchmark, m.metric, m.version, m.score, m.stderr, m.n_items, m.higher_is_better,
                    stamp, SCHEMA_VERSION, m.step]
        if metrics:
            self._upsert_metrics(list(metrics.values()))
        events = [(r.run_id, r.status, (r.error or "")[-500:] if r.status == "failed" else None, stamp, SCHEMA_VERSION)
                  for r, _, _ in todo]
        self._values("INSERT INTO run_events VALUES {values}",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)", events)
        self._values("INSERT INTO ingested_files VALUES {values}",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::TIMESTAMP, ?::INTEGER)",
                     [(d, r.run_id, p, stamp, SCHEMA_VERSION) for r, d, p in todo])

    _METRIC_ROW = ("(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::DOUBLE, ?::DOUBLE, ?::INTEGER, ?::BOOLEAN, "
                   "?::TIMESTAMP, ?::INTEGER, ?::INTEGER)")
    _METRIC_COLS = ("run_id, benchmark, metric, benchmark_version, score, stderr, n_items, higher_is_better, "
                    "created_at, schema_version, step")

    def _upsert_metrics(self, rows: Sequence[Sequence[Any]]) -> None:
        """Replace or insert full ``metrics`` rows (:attr:`_METRIC_COLS` order), unique by (run_id, benchmark,
        metric, step) among themselves.

        ``metrics`` has no PRIMARY KEY (schema v4): the stored rows with the same key are deleted first, so the
        key stays unique, as ``INSERT OR REPLACE`` kept it.
        """
        keys = [(*r[:3], r[10]) for r in rows]
        if len(set(keys)) != len(keys):
            raise RegistryError("internal: a metric is listed twice in one write")
        self._values("DELETE FROM metrics USING (VALUES {values}) v(run_id, benchmark, metric, step) WHERE "
                     "metrics.run_id = v.run_id AND metrics.benchmark = v.benchmark AND metrics.metric = v.metric "
                     "AND metrics.step IS NOT DISTINCT FROM v.step",
                     "(?::VARCHAR, ?::VARCHAR, ?::VARCHAR, ?::INTEGER)", keys)
        self._values(f"INSERT INTO metrics ({self._METRIC_COLS}) VALUES {{values}}", self._METRIC_ROW, rows)

    def _put_metrics(self, run_id: str, metrics: Sequence[MetricResult]) -> None:
        last = {(m.benchmark, m.metric, m.step): m for m in metrics}  # a metric listed twice: the last one wins
        self._upsert_metrics([[run_id, m.benchmark, m.metric, m.version, m.score, m.stderr, m.n_items,
                               m.higher_is_better, now(), SCHEMA_VERSION, m.step] for m in last.values()])

    def add_metrics(self, run_id: str, metrics: Sequence[MetricResult]) -> None:
        """Upsert metrics of one run."""
        with self.transaction():
            self._put_metrics(run_id, metrics)

    # ---- export ----------------------------------------------------------
    def export_rows(self, experiment: str | None = None) -> list[dict[str, Any]]:
        """One flat row per run: ids, axes (``axis_*``), N, D, FLOPs, status, split, and ``bench/metric`` columns
        (``step`` too for a run imported with a step column, ``metadata.step``); then one row per scored
        checkpoint of the run (its ``step`` and that checkpoint's metrics)."""
        out = []
        for r in self.runs(experiment):
            row: dict[str, Any] = {"run_id": r.run_id, "experiment": r.experiment, "design_version": r.design_version,
                                   "model_size": r.model_size, "model_params": r.model_params,
                                   "train_tokens": r.train_tokens, "train_flops": r.train_flops, "seed": r.seed,
                                   "status": r.status, "split": r.split, "source": r.source}
            if r.metadata.get("step") is not None:  # imported with a step column (<id>@<step>: --checkpoints all)
                row["step"] = r.metadata["step"]
            row.update({axis_column(k): v for k, v in r.recipe.items()})
            row.update(r.metrics)
            out.append(row)
            for step in sorted(r.checkpoints):  # checkpoints as data: one row per scored checkpoint
                out.append({**{k: v for k, v in row.items() if "/" not in k}, "step": step, **r.checkpoints[step]})
        return out
