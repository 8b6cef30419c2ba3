"""The error hierarchy's root, shared by every package.

Each package subclasses :class:`ToolscaleError` (``FitError``, ``RegistryError``,
``SynthError``...). The CLI turns any ``ToolscaleError`` into one line on stderr and
its ``exit_code``; anything else is a bug and shows a traceback.
"""

from __future__ import annotations

__all__ = ["ToolscaleError", "UsageError", "ConfigError"]


class ToolscaleError(Exception):
    """A failure the user can act on; printed as one line, exit code 1."""

    exit_code: int = 1


class UsageError(ToolscaleError):
    """Bad input on the command line or in a file the user gave; exit code 2."""

    exit_code = 2


class ConfigError(UsageError):
    """An experiment config that does not validate."""
