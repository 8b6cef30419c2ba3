"""Contracts of the LLM client: replies, tool calls and per-role usage (pydantic and stdlib only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ReplyToolCall", "ChatReply", "ToolCallProblem", "LLMUsage"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class ReplyToolCall(_Frozen):
    """One tool call of a reply, in the OpenAI chat-completions shape."""

    id: str
    """The call id (``call_...``) the tool message must answer."""
    name: str
    """The function name the model asked for (not checked against the offered tools here)."""
    arguments: str
    """``function.arguments`` exactly as the endpoint sent it: a JSON string, possibly truncated or invalid."""

    def to_openai(self) -> dict[str, Any]:
        """``{"id", "type": "function", "function": {"name", "arguments"}}``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class ChatReply(_Frozen):
    """The first choice of one chat completion, with its token counts."""

    role: str
    """LLM role that asked (``task_writer``, ``policy``, ``emulator``, ``judge``)."""
    model: str
    """Model name the request was sent with."""
    content: str
    """Assistant text ("" when the model only called tools)."""
    tool_calls: list[ReplyToolCall]
    """Tool calls in order (empty when none)."""
    finish_reason: str | None
    """``stop``, ``tool_calls``, ``length`` (cut at ``max_tokens``)... as the endpoint said; None if absent."""
    tokens_in: int
    """Prompt tokens the endpoint reported (0 if it reported none), in tokens."""
    tokens_out: int
    """Completion tokens the endpoint reported (0 if it reported none), in tokens."""
    cached: bool
    """True when the reply came from the response cache (no request was sent)."""
    key: str
    """Content address of the request (sha256 hex of the canonical request), the cache key."""

    def message(self) -> dict[str, Any]:
        """The reply as an assistant message for the conversation (the shape of :class:`synth.models.Message`)."""
        return {"role": "assistant", "content": self.content,
                "tool_calls": [c.to_openai() for c in self.tool_calls] or None, "tool_call_id": None, "name": None}


class ToolCallProblem(_Frozen):
    """Why one tool call of a reply cannot be executed (:func:`synth.llm.toolcalls.check_tool_calls`)."""

    call_id: str
    """The call's id."""
    name: str
    """The tool name the model asked for."""
    reason: str
    """Countable reason: ``unknown_tool``, ``truncated_tool_call``, ``malformed_arguments``, ``schema_violation``."""
    detail: str
    """One line for people: the offered names, the bad arguments, or the schema error."""


class LLMUsage(_Frozen):
    """Requests, tokens and dollars of one LLM role in one synthesis (``manifest.json`` key ``llm``).

    ``dollars = tokens_in * price_in / 1e6 + tokens_out * price_out / 1e6`` over every reply used,
    cached ones included (what the data cost to make); ``dollars_spent`` counts only the replies whose
    request was sent in this run (0 on a rerun served from the cache).
    """

    requests: int = 0
    """Requests sent that returned a completion (cache hits not included), in requests."""
    retries: int = 0
    """Extra attempts after a 429, 5xx, timeout, connection error or malformed reply, in attempts."""
    cache_hits: int = 0
    """Replies served from the response cache, in replies."""
    failures: int = 0
    """Requests that ended in an error after their tries (the sample was rejected or the run failed)."""
    tokens_in: int = 0
    """Prompt tokens over all replies used, cached included, in tokens."""
    tokens_out: int = 0
    """Completion tokens over all replies used, cached included, in tokens."""
    unmetered: int = 0
    """Replies without a ``usage`` object (their tokens count as 0), in replies."""
    dollars: float = 0.0
    """Cost of all replies used, cached included, in dollars."""
    dollars_spent: float = 0.0
    """Cost of the replies requested in this run (cache hits excluded), in dollars."""
    dollars_per_accepted: float | None = None
    """``dollars`` / accepted trajectories, in dollars per trajectory; None before a dataset is counted
    or when none was accepted."""
