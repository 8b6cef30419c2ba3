"""Errors of the synthesis package (one line each, naming the bad value and what was expected)."""

from __future__ import annotations

from toolscale.errors import ToolscaleError, UsageError

__all__ = ["SynthError", "RecipeError", "ToolCallError", "ToolDocError", "ServerError", "JudgeError",
           "SampleRejected", "LLMConfigError", "LLMError", "LLMEndpointError", "LLMReplyError"]


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


class LLMConfigError(UsageError):
    """An LLM role that cannot be used as configured: unknown role or model, missing API key variable."""


class LLMError(SynthError):
    """An LLM request that failed after its bounded retries."""


class LLMEndpointError(LLMError):
    """The endpoint cannot serve at all (unreachable, 429/5xx after every try, auth refused): the run fails.

    The message names the URL and the role; nothing of the dataset is written.
    """


class LLMReplyError(LLMError, SampleRejected):
    """One request's reply is unusable (malformed JSON, no choices, a 400): that sample is rejected.

    ``reason`` is the short, countable rejection reason (``malformed_reply``, ``http_400``...); as a
    :class:`SampleRejected` it is counted wherever a role's rejection is.
    """
