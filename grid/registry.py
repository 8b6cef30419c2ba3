"""The run registry: one DuckDB file; this package's stores are the only code that runs SQL.

:class:`Registry` is every store over one connection: :class:`~grid.run_store.RunStore`
(experiments, designs, runs, metrics, ingest, export) with :class:`~grid.import_store.ImportStore` on top
(bulk imports and simulations, never a silent overwrite), :class:`~grid.artifact_store.ArtifactStore`
(datasets, tool docs, quarantine) and :class:`~grid.fit_store.FitStore` (fits, allocations),
all built on :class:`~grid.connection.Connection` (the single-writer lock, schema,
migrations, transactions, the shared ``_where``). A caller that needs one concern
may open that store alone; it takes the same lock and runs the same migrations.
"""

from __future__ import annotations

from grid.artifact_store import ArtifactStore
from grid.connection import code_version, now
from grid.errors import RegistryError, RegistryLockedError
from grid.fit_store import FitStore
from grid.import_store import ImportStore
from grid.models import IngestReport

__all__ = ["Registry", "RegistryError", "RegistryLockedError", "IngestReport", "code_version", "now"]


class Registry(ImportStore, ArtifactStore, FitStore):
    """A DuckDB registry file with every store. Use as a context manager; closes on exit.

    Parameters
    ----------
    path : path of the ``.duckdb`` file (created, with its schema, if missing).
    read_only : open without write access (still takes a shared lock).
    lock_timeout_s : seconds to wait for another process to release the file.
    """
