"""From benchmark items to chat requests: tool schemas, prompts and reference answers (pure).

BFCL describes parameters with its own type names (``dict``, ``float``, ``tuple``, ``any``); the
model is shown JSON schema's (``object``, ``number``, ``array``, ``string``), as BFCL itself does
for OpenAI-style function-calling models. Scoring always uses the original descriptions.
"""

from __future__ import annotations

import json
from typing import Any

from eval.ast_match import gold_calls
from eval.models import CallItem, ChatRequest, ToolCall

__all__ = ["to_json_schema", "openai_tool", "item_request", "reference_message", "reference_request",
           "assistant_message", "IRRELEVANT_ANSWER"]

IRRELEVANT_ANSWER = "None of the available functions can answer this request."
"""The reference final answer of an irrelevance item (no call); used for the likelihood metrics only."""

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": "string"}


def to_json_schema(schema: Any) -> Any:
    """A copy of a parameter schema with BFCL type names mapped to JSON schema's, recursively."""
    if isinstance(schema, dict):
        out = {k: to_json_schema(v) for k, v in schema.items()}
        t = schema.get("type")
        if isinstance(t, str) and t in _TYPES:
            out["type"] = _TYPES[t]
        return out
    if isinstance(schema, list):
        return [to_json_schema(v) for v in schema]
    return schema


def openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    """``{"type": "function", "function": {name, description, parameters}}`` for one function description."""
    fn = {"name": function.get("name", ""), "description": function.get("description", ""),
          "parameters": to_json_schema(function.get("parameters") or {"type": "object", "properties": {}})}
    return {"type": "function", "function": fn}


def _message(role: str, content: str | None, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": extra.get("tool_calls"),
            "tool_call_id": extra.get("tool_call_id"), "name": extra.get("name")}


def item_request(item: CallItem) -> ChatRequest:
    """The prompt of an item: its messages (all five keys of pinned interface 1) and its tools."""
    messages = [_message(m.get("role", "user"), m.get("content"), tool_calls=m.get("tool_calls"),
                         tool_call_id=m.get("tool_call_id"), name=m.get("name")) for m in item.messages]
    return ChatRequest(messages=messages, tools=[openai_tool(f) for f in item.functions])


def assistant_message(calls: list[ToolCall], content: str = "") -> dict[str, Any]:
    """An OpenAI-format assistant message carrying ``calls`` (ids ``call_1``, ``call_2``...)."""
    tool_calls = [{"id": f"call_{i}", "type": "function",
                   "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                  for i, c in enumerate(calls, 1)]
    return _message("assistant", content, tool_calls=tool_calls or None)


def reference_message(item: CallItem) -> dict[str, Any]:
    """The reference assistant turn: the gold calls, or :data:`IRRELEVANT_ANSWER` for irrelevance."""
    calls = gold_calls(item)
    return assistant_message(calls) if calls else _message("assistant", IRRELEVANT_ANSWER)


def reference_request(item: CallItem) -> ChatRequest:
    """Prompt plus reference answer, for scoring the answer's likelihood."""
    req = item_request(item)
    return ChatRequest(messages=[*req.messages, reference_message(item)], tools=req.tools)
