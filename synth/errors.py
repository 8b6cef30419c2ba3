"""Errors of the synthesis package (one line each, naming the bad value and what was expected)."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["SynthError", "RecipeError", "ToolCallError", "ToolDocError", "ServerError", "JudgeError",
           "SampleRejected"]


class SynthError(ToolscaleError):
    """A synthesis failure the user can act on (exit code 1)."""


class RecipeError(UsageError):
    """A recipe with an unknown knob, a bad value, or an impossible combination (exit code 2)."""


class ToolDocError(UsageError):
    """A tool document or schema that does not convert to an OpenAI function schema."""


class ToolCallError(SynthError):
    """A tool was called with invalid arguments (unknown tool, missing/ill-typed argument, unknown id)."""


class ServerError(SynthError):
    """An MCP server that could not be started, crashed, or did not answer in time."""


class JudgeError(SynthError):
    """A judge that raised, timed out, or returned no usable score (the sample is rejected)."""


class SampleRejected(SynthError):
    """One trajectory rejected by a role (policy, emulator, task writer), with its countable ``reason``.

    Never fatal: the task is counted under ``reason`` in the manifest's ``rejections``.
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason
