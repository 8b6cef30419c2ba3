"""What the LLM roles need from a chat client, and the parsing they share.

:class:`ChatClient` is the one method the roles call: ``chat(role, messages, tools=None)`` returning a
reply with ``content``, ``tool_calls`` (each ``id``, ``name``, ``arguments`` as the JSON string the
endpoint sent) and ``finish_reason``. :class:`synth.llm.client.LLMClient` satisfies it over any
OpenAI-compatible endpoint; tests may pass any object with that method.

A reply that cannot be used rejects one sample: the client raises an error with a ``reason`` attribute
(``malformed_reply``...), and :func:`sample_reason` turns it into a counted reason; every other error
(an endpoint that is down) propagates and fails the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["ToolCallLike", "ReplyLike", "ChatClient", "parse_score", "parse_object", "sample_reason",
           "transcript", "wire_messages"]


class ToolCallLike(Protocol):
    """One tool call of a reply."""

    id: str
    name: str
    arguments: str


class ReplyLike(Protocol):
    """The first choice of a chat completion."""

    content: str
    tool_calls: Sequence[ToolCallLike]
    finish_reason: str | None


class ChatClient(Protocol):
    """Sends one chat completion for a role (``task_writer``, ``policy``, ``emulator``, ``judge``)."""

    def chat(self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
             ) -> ReplyLike:
        ...


_SCORE_JSON = re.compile(r"\{[^{}]*\}")
_SCORE_WORD = re.compile(r"(?i)\bscore\b\W{0,3}([1-5])\b")
_LONE = re.compile(r"(?<![\d.])([1-5])(?!\d|\.\d)")


def parse_score(text: str) -> tuple[int, bool]:
    """A 1-5 score from a rubric reply: ``(score, used_fallback)``; raises ValueError if there is none.

    Strict form: a JSON object ``{"score": N}`` (the first such object in the text). Fallback: ``score: N``
    or ``score N`` anywhere, else a lone digit 1-5 when it is the only one in the text.
    """
    for m in _SCORE_JSON.finditer(text or ""):
        try:
            obj = json.loads(m.group(0))
        except ValueError:
            continue
        v = obj.get("score") if isinstance(obj, dict) else None
        if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5:
            return v, False
        if isinstance(v, float) and v.is_integer() and 1 <= v <= 5:
            return int(v), False
    m = _SCORE_WORD.search(text or "")
    if m:
        return int(m.group(1)), True
    lone = _LONE.findall(text or "")
    if len(lone) == 1:
        return int(lone[0]), True
    raise ValueError(f"no 1-5 score in reply {text[:80]!r}")


def parse_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply (optionally inside a ```json fence); raises ValueError otherwise."""
    t = (text or "").strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[4:] if t.lower().startswith("json") else t
    start, end = t.find("{"), t.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the reply")
    obj = json.loads(t[start:end + 1])
    if not isinstance(obj, dict):
        raise ValueError("the reply is not a JSON object")
    return obj


def sample_reason(err: BaseException) -> str | None:
    """The countable reason of an error that rejects one sample (it has a ``reason``), else None."""
    reason = getattr(err, "reason", None)
    return reason if isinstance(reason, str) and reason else None


def wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the chat-completions protocol takes them: keys that are None left out."""
    return [{k: v for k, v in m.items() if v is not None} for m in messages]


def transcript(messages: list[dict[str, Any]], limit: int = 12000) -> str:
    """A readable transcript of a conversation for a rubric prompt (the last ``limit`` characters)."""
    lines = []
    for m in messages:
        if m["role"] == "tool":
            lines.append(f"[tool {m.get('name')} -> {m.get('tool_call_id')}] {m['content']}")
            continue
        text = m.get("content") or ""
        calls = m.get("tool_calls") or []
        if calls:
            text += "".join(f"\n  CALL {c['id']}: {c['function']['name']}({c['function']['arguments']})"
                            for c in calls)
        lines.append(f"[{m['role']}] {text}")
    out = "\n".join(lines)
    return out if len(out) <= limit else "...\n" + out[-limit:]
