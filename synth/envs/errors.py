"""Errors of :mod:`synth.envs`: every one is a :class:`toolscale.errors.ToolscaleError`.

A rejected environment sample is *data* (a :class:`synth.envs.models.CheckResult` with reasons), not an
exception; these errors are for bad input the caller can act on (a file that is not an environment artifact,
a tool call on a finished episode) and for a sandbox that cannot start at all.
"""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["EnvError", "EnvFormatError", "EpisodeError", "SandboxError", "GraphError"]


class EnvError(ToolscaleError):
    """Base class of the environment errors (exit code 1)."""


class EnvFormatError(UsageError):
    """A file or row that is not a valid environment artifact (exit code 2); the message names the row."""


class GraphError(EnvError):
    """A QA dependency graph that fails a structural check (cycle, missing answer, unknown dependency...)."""


class EpisodeError(UsageError):
    """A misuse of :class:`synth.envs.api.Environment` (a step after the episode ended, a malformed call)."""


class SandboxError(EnvError):
    """The sandbox could not run at all (no interpreter, cannot create a temporary directory)."""
