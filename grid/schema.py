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

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3]
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
