"""The grid package's errors: registry failures, bad designs, tables that cannot be imported.

``RegistryError`` is a failure the user can act on (exit code 1); ``DesignError`` and
``TableImportError`` are bad input (:class:`toolscale.errors.UsageError`, exit code 2).
"""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["RegistryError", "RegistryLockedError", "RegistryNotFoundError", "RegistryPathError", "UnknownNameError", "RegistryCorruptError",
           "RegistryWriteError", "RegistryConflictError", "ExperimentNameError", "DesignError",
           "TableImportError"]


class RegistryError(ToolscaleError):
    """A registry operation that cannot be done (unknown experiment, newer schema...)."""


class RegistryLockedError(RegistryError):
    """Another process holds the registry file."""


class RegistryNotFoundError(RegistryError):
    """The registry file named does not exist (a wrong path is a user mistake: exit code 2)."""

    exit_code = 2


class RegistryPathError(RegistryError):
    """``--registry`` names something that is not a registry: a folder, a FIFO, a CSV or Parquet table, any file
    without DuckDB's header. A user mistake (exit code 2); the file is not touched."""

    exit_code = 2


class UnknownNameError(RegistryError):
    """An experiment (or other stored name) that the registry does not hold: a typo is a user mistake (exit 2)."""

    exit_code = 2


class RegistryCorruptError(RegistryError):
    """The registry file is truncated or fails DuckDB's block checksums; the message names it and the way back."""


class RegistryWriteError(RegistryError):
    """The registry cannot be written here: its folder refuses the WAL file, the disk is full, or it is read-only."""


class RegistryConflictError(UsageError):
    """Stored results would be overwritten (re-import with other values, simulate into an existing experiment,
    an import into a designed or simulated experiment): refused unless the user asks (exit code 2)."""


class ExperimentNameError(UsageError):
    """An experiment name outside ``[A-Za-z0-9][A-Za-z0-9_.-]*`` or longer than 100 characters (exit code 2)."""


class DesignError(UsageError):
    """A design that cannot be built from the config (bad levels, resolution, constraints...)."""


class TableImportError(UsageError):
    """A CSV or Parquet table of runs that cannot be imported (bad map, missing column, non-numeric value...)."""
