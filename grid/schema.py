"""Every DuckDB table of the registry, its version, and the ordered migrations.

This module owns all DDL; the registry stores (:mod:`grid.connection` and the `grid.*_store` modules behind
:class:`grid.registry.Registry`) are the only code that runs SQL.
A database at version ``v`` is brought to :data:`SCHEMA_VERSION` by applying
``MIGRATIONS[v:]`` in order, inside one transaction.

Every data row carries ``schema_version``: the version of the code that wrote it.
Axis values live in one column per axis (``axis_<name> DOUBLE``), added on demand
by :func:`axis_column_ddl` when an experiment declares its axes.
"""

from __future__ import annotations

import re

__all__ = ["SCHEMA_VERSION", "MIGRATIONS", "axis_column", "axis_column_ddl"]

_V1 = [
    """CREATE TABLE IF NOT EXISTS schema_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS experiments (
        name TEXT PRIMARY KEY,
        config JSON,
        axes JSON,
        simulated BOOLEAN NOT NULL DEFAULT FALSE,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS designs (
        design_version TEXT PRIMARY KEY,
        experiment TEXT NOT NULL,
        summary JSON,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT PRIMARY KEY,
        experiment TEXT NOT NULL,
        design_version TEXT NOT NULL,
        recipe JSON NOT NULL,
        model_size TEXT NOT NULL,
        model_params DOUBLE,
        train_tokens DOUBLE,
        train_flops DOUBLE,
        seed INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        job_id TEXT,
        error TEXT,
        source TEXT NOT NULL DEFAULT 'design',
        metadata JSON,
        created_at TIMESTAMP NOT NULL,
        submitted_at TIMESTAMP,
        finished_at TIMESTAMP,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS metrics (
        run_id TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        metric TEXT NOT NULL,
        benchmark_version TEXT NOT NULL,
        score DOUBLE NOT NULL,
        stderr DOUBLE,
        n_items INTEGER,
        higher_is_better BOOLEAN NOT NULL DEFAULT TRUE,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL,
        PRIMARY KEY (run_id, benchmark, metric))""",
    """CREATE TABLE IF NOT EXISTS datasets (
        dataset_id TEXT PRIMARY KEY,
        experiment TEXT,
        recipe JSON,
        seed INTEGER,
        path TEXT,
        manifest JSON,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tool_docs (
        server TEXT NOT NULL,
        name TEXT NOT NULL,
        doc JSON NOT NULL,
        collected_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL,
        PRIMARY KEY (server, name))""",
    """CREATE TABLE IF NOT EXISTS quarantine (
        server TEXT NOT NULL,
        tool TEXT,
        reason TEXT NOT NULL,
        collected_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS fits (
        fit_id TEXT PRIMARY KEY,
        experiment TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        metric TEXT NOT NULL,
        law TEXT NOT NULL,
        converged BOOLEAN NOT NULL,
        n_points INTEGER NOT NULL,
        data_hash TEXT NOT NULL,
        payload JSON NOT NULL,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS ingested_files (
        content_hash TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        path TEXT,
        ingested_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
]

# v2: allocations are stored; runs record the code version and split; an event log.
_V2 = [
    """CREATE TABLE IF NOT EXISTS allocations (
        allocation_id TEXT PRIMARY KEY,
        experiment TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        budget DOUBLE NOT NULL,
        unit TEXT NOT NULL,
        fit_id TEXT,
        payload JSON NOT NULL,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS split TEXT DEFAULT 'fit'",
    "ALTER TABLE runs ADD COLUMN IF NOT EXISTS code_version TEXT",
    """CREATE TABLE IF NOT EXISTS run_events (
        run_id TEXT NOT NULL,
        event TEXT NOT NULL,
        detail TEXT,
        event_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
]

# v3: no silent overwrite: overwritten values are kept, fits know when their data changed under them.
_V3 = [
    """CREATE TABLE IF NOT EXISTS run_history (
        run_id TEXT NOT NULL,
        field TEXT NOT NULL,
        old_value TEXT,
        new_value TEXT,
        changed_at TIMESTAMP NOT NULL,
        source TEXT NOT NULL,
        schema_version INTEGER NOT NULL)""",
    "ALTER TABLE fits ADD COLUMN IF NOT EXISTS stale_reason TEXT",
]

# v4: no PRIMARY KEY (an ART index) on the two big tables. Maintaining those indexes was most of a bulk import's
# write-lock time (2M metric rows: 33 s with the key against 5 s without). Uniqueness of ``runs.run_id`` and of
# ``metrics (run_id, benchmark, metric)`` is kept by the only code that writes them (:mod:`grid.run_store`,
# :mod:`grid.import_store`), which checks with set-based SQL before inserting. The tables are copied (axis columns
# included) and their defaults and NOT NULL constraints set again; the rows are unchanged.
_RUNS_NOT_NULL = ("run_id", "experiment", "design_version", "recipe", "model_size", "seed", "status", "attempts",
                  "source", "created_at", "schema_version")
_RUNS_DEFAULTS = (("seed", "0"), ("status", "'pending'"), ("attempts", "0"), ("source", "'design'"),
                  ("split", "'fit'"))
_V4 = [
    "CREATE TABLE runs_v4 AS SELECT * FROM runs",
    "DROP TABLE runs",
    "ALTER TABLE runs_v4 RENAME TO runs",
    *(f"ALTER TABLE runs ALTER COLUMN {c} SET DEFAULT {d}" for c, d in _RUNS_DEFAULTS),
    *(f"ALTER TABLE runs ALTER COLUMN {c} SET NOT NULL" for c in _RUNS_NOT_NULL),
    """CREATE TABLE metrics_v4 (
        run_id TEXT NOT NULL,
        benchmark TEXT NOT NULL,
        metric TEXT NOT NULL,
        benchmark_version TEXT NOT NULL,
        score DOUBLE NOT NULL,
        stderr DOUBLE,
        n_items INTEGER,
        higher_is_better BOOLEAN NOT NULL DEFAULT TRUE,
        created_at TIMESTAMP NOT NULL,
        schema_version INTEGER NOT NULL)""",
    "INSERT INTO metrics_v4 SELECT * FROM metrics",
    "DROP TABLE metrics",
    "ALTER TABLE metrics_v4 RENAME TO metrics",
]

# v5: checkpoints as data. A metric row may belong to one checkpoint of its run (``step``, the optimizer step it
# was saved at); NULL is the run's own value (its final model, as before). Unique by (run_id, benchmark, metric,
# step), kept by the code that writes them.
_V5 = [
    "ALTER TABLE metrics ADD COLUMN IF NOT EXISTS step INTEGER",
]

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5]
"""``MIGRATIONS[i]`` takes a database from version ``i`` to ``i + 1``."""

SCHEMA_VERSION: int = len(MIGRATIONS)
"""The version this code writes."""

_AXIS = re.compile(r"^[a-z][a-z0-9_]*$")


def axis_column(name: str) -> str:
    """The ``runs`` column holding axis ``name`` (validated: snake_case only)."""
    if not _AXIS.match(name):
        raise ValueError(f"axis name must be snake_case, got {name!r}")
    return f"axis_{name}"


def axis_column_ddl(name: str) -> str:
    """DDL adding the column of axis ``name`` to ``runs`` if it is missing."""
    return f'ALTER TABLE runs ADD COLUMN IF NOT EXISTS "{axis_column(name)}" DOUBLE'
