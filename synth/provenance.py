"""A cheap provenance check: is every argument of every action visible in earlier history?

For each assistant tool call, each argument value is looked up in the user query and in earlier ``tool``
messages (strings by substring, numbers and booleans as whole JSON tokens). An action is *derivable* when
all its argument values are found. Its *support hops* are ``turn(action) - turn(latest observation
holding the value)`` for values found only in observations, counting assistant turns but not pure
retry turns (a turn whose calls all repeat tools that just failed). This is the labeler until probes/'s
counterfactual probe takes over, and the measure behind ``derivable_share`` and ``support_depth``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

__all__ = ["ActionProvenance", "provenance", "value_in"]


@dataclass(frozen=True)
class ActionProvenance:
    """Provenance of one visible tool call."""

    call_id: str
    tool: str
    derivable: bool
    missing: tuple[str, ...]
    """Arguments whose value is not in the visible history."""
    hops: int
    """Largest support distance over its arguments (0 if all came from the query)."""
    retry: bool


def value_in(value, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` (numbers as whole tokens)."""
    if isinstance(value, str):
        return bool(value) and value in text
    if isinstance(value, list) and value:
        return all(value_in(v, text) for v in value)
    if isinstance(value, bool) or isinstance(value, int | float):
        tok = json.dumps(value)
        return re.search(rf"(?<![\w.]){re.escape(tok)}(?![\w]|\.\d)", text) is not None
    return json.dumps(value, sort_keys=True) in text


def provenance(messages: list[dict]) -> list[ActionProvenance]:
    """Provenance of every visible call in a conversation (see the module docstring)."""
    query = "\n".join(m["content"] for m in messages if m["role"] == "user")
    obs: list[tuple[int, str]] = []
    out: list[ActionProvenance] = []
    turn = 0
    last_failed: set[str] = set()
    for m in messages:
        if m["role"] == "tool":
            obs.append((turn, m["content"]))
            if m["content"].startswith('{"error"'):
                last_failed.add(m["name"])
            continue
        if m["role"] != "assistant" or not m.get("tool_calls"):
            continue
        names = [c["function"]["name"] for c in m["tool_calls"]]
        retry = bool(last_failed) and all(n in last_failed for n in names)
        if not retry:
            turn += 1
        last_failed = set()
        for c in m["tool_calls"]:
            try:
                args = json.loads(c["function"]["arguments"])
            except (ValueError, TypeError):
                args = None
            if not isinstance(args, dict):
                out.append(ActionProvenance(c["id"], c["function"]["name"], False, ("<unparseable>",), 0, retry))
                continue
            missing, hops = [], 0
            for k, v in args.items():
                if value_in(v, query):
                    continue
                src = next((t for t, text in reversed(obs) if value_in(v, text)), None)
                if src is None:
                    missing.append(k)
                else:
                    hops = max(hops, turn - src)
            out.append(ActionProvenance(c["id"], c["function"]["name"], not missing, tuple(missing), hops, retry))
    return out
