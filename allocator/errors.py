"""Errors of the allocator."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["AllocatorError", "AllocatorUsageError"]


class AllocatorError(ToolscaleError):
    """An allocation that cannot be made (no fit, a fit that did not converge, an infeasible budget)."""

    exit_code = 2


class AllocatorUsageError(UsageError):
    """Bad allocation input (budget, unit, benchmark)."""
