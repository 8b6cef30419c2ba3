"""Errors of the training package."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["TrainError", "TrainDataError"]


class TrainError(ToolscaleError):
    """A training run that cannot proceed (missing model folder, broken checkpoint, missing dependency)."""


class TrainDataError(UsageError):
    """A training data folder or row that is not in the trajectory format (pinned interface 1)."""
