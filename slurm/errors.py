"""Errors of the launcher: submission refused, unknown job kind."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["LaunchError", "SubmitError", "UnknownJobKindError"]


class LaunchError(ToolscaleError):
    """A launch, sync or cancel that cannot be done."""


class SubmitError(UsageError):
    """The scheduler refused a submission (bad partition, impossible resources...); runs stay pending."""


class UnknownJobKindError(UsageError):
    """A job kind name that is not registered."""
