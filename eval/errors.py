"""Errors of the eval package (one line each; the CLI prints them)."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["EvalError", "BenchmarkDataError", "BackendError", "UnknownBenchmarkError"]


class EvalError(ToolscaleError):
    """An evaluation that cannot run."""


class BenchmarkDataError(EvalError):
    """A benchmark's data is missing or unreadable (e.g. the BFCL wheel was not downloaded)."""


class BackendError(EvalError):
    """A generation backend failed (endpoint unreachable, model folder unreadable, vLLM missing)."""


class UnknownBenchmarkError(UsageError):
    """A benchmark name that is not registered."""
