"""Checks of a reply's tool calls against the tools offered: what makes a generated step unusable.

:func:`check_tool_calls` returns one countable reason per bad call, in call order:

``unknown_tool``
    the name is not among the offered tools;
``truncated_tool_call``
    the arguments are not valid JSON and the reply was cut at ``max_tokens`` (``finish_reason ==
    "length"``);
``malformed_arguments``
    the arguments are not valid JSON, or not a JSON object, without a cut;
``schema_violation``
    the arguments violate the tool's JSON schema (a required argument missing, a wrong type, a value
    outside an ``enum``, an unknown key where ``additionalProperties`` is false).

The caller rejects the step (or the trajectory) with these reasons; an empty list means every call can
be executed. The schema check uses ``jsonschema`` (Draft 2020-12 semantics, as MCP tool schemas use).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from synth.llm.models import ChatReply, ReplyToolCall, ToolCallProblem

__all__ = ["check_tool_calls", "parse_arguments"]


def parse_arguments(call: ReplyToolCall) -> dict[str, Any] | None:
    """The call's arguments as a dict, or None when they are not a JSON object ("" reads as ``{}``)."""
    text = call.arguments.strip()
    if not text:
        return {}
    try:
        args = json.loads(text)
    except ValueError:
        return None
    return args if isinstance(args, dict) else None


def _schemas(tools: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {}
    for t in tools:
        fn = t.get("function", t)
        out[fn["name"]] = fn.get("parameters") or {"type": "object"}
    return out


def check_tool_calls(reply: ChatReply, tools: Sequence[Mapping[str, Any]]) -> list[ToolCallProblem]:
    """Problems of ``reply``'s tool calls against the offered OpenAI tool schemas (see the module docstring).

    Examples
    --------
    >>> from synth.llm.models import ChatReply, ReplyToolCall
    >>> r = ChatReply(role="policy", model="m", content="", finish_reason="tool_calls", tokens_in=0,
    ...               tokens_out=0, cached=False, key="k",
    ...               tool_calls=[ReplyToolCall(id="c1", name="nope", arguments="{}")])
    >>> [p.reason for p in check_tool_calls(r, [])]
    ['unknown_tool']
    """
    import jsonschema

    schemas = _schemas(tools)
    problems = []
    for call in reply.tool_calls:
        if call.name not in schemas:
            problems.append(ToolCallProblem(call_id=call.id, name=call.name, reason="unknown_tool",
                                            detail=f"{call.name!r} is not offered ({', '.join(sorted(schemas)) or 'none'})"))
            continue
        args = parse_arguments(call)
        if args is None:
            reason = "truncated_tool_call" if reply.finish_reason == "length" else "malformed_arguments"
            problems.append(ToolCallProblem(call_id=call.id, name=call.name, reason=reason,
                                            detail=f"arguments {call.arguments[:60]!r}"))
            continue
        try:
            cls = jsonschema.validators.validator_for(schemas[call.name], default=jsonschema.Draft202012Validator)
            error = jsonschema.exceptions.best_match(cls(schemas[call.name]).iter_errors(args))
        except jsonschema.exceptions.SchemaError as err:
            problems.append(ToolCallProblem(call_id=call.id, name=call.name, reason="schema_violation",
                                            detail=f"bad schema: {err.message}"))
            continue
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path) or "arguments"
            problems.append(ToolCallProblem(call_id=call.id, name=call.name, reason="schema_violation",
                                            detail=f"{where}: {error.message}"))
    return problems
