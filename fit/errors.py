"""Errors of fit/: bad input is a :class:`FitInputError` (exit 2), a failed fit a :class:`FitError`."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["FitError", "FitInputError", "UnknownLawError"]


class FitError(ToolscaleError):
    """A fit that cannot be done or did not converge (the message carries the diagnostics)."""


class FitInputError(UsageError, FitError):
    """Data or arguments a law cannot be fitted to (too few runs, non-finite scores, one level...)."""


class UnknownLawError(FitInputError):
    """A law name that is not registered (the message lists the known ones)."""
