"""The grid package's errors: registry failures, bad designs, tables that cannot be imported.

``RegistryError`` is a failure the user can act on (exit code 1); ``DesignError`` and
``TableImportError`` are bad input (:class:`toolscale.errors.UsageError`, exit code 2).
"""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["RegistryError", "RegistryLockedError", "DesignError", "TableImportError"]


class RegistryError(ToolscaleError):
    """A registry operation that cannot be done (unknown experiment, newer schema...)."""


class RegistryLockedError(RegistryError):
    """Another process holds the registry file."""


class DesignError(UsageError):
    """A design that cannot be built from the config (bad levels, resolution, constraints...)."""


class TableImportError(UsageError):
    """A CSV or Parquet table of runs that cannot be imported (bad map, missing column, non-numeric value...)."""
