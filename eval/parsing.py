"""Parse tool calls out of a model's text (pinned interface 3), robustly.

The format is ``<tool_call>{"name": "...", "arguments": {...}}</tool_call>``, one block per call.
Anything malformed (unterminated block, a closing tag without an opening one, invalid JSON,
a missing or non-string name, arguments that are not an object, NaN/Infinity) is recorded as a
malformed attempt and never raises: the scorer counts it as a wrong answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from eval.models import ParsedOutput, ToolCall

__all__ = ["parse_output", "parse_tool_calls", "format_tool_call", "OPEN_TAG", "CLOSE_TAG"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
_TAG = re.compile(r"<tool_call>|</tool_call>")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _decode_call(body: str) -> ToolCall | str:
    """A :class:`ToolCall` from one block's JSON, or the reason it is malformed."""
    body = body.strip()
    if not body:
        return "empty tool_call block"
    try:
        obj = json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as err:
        return f"invalid JSON: {str(err)[:80]}"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return "missing or non-string 'name'"
    args = obj.get("arguments", {})
    if isinstance(args, str):  # OpenAI style: arguments as a JSON string
        try:
            args = json.loads(args, parse_constant=_reject_constant) if args.strip() else {}
        except (ValueError, RecursionError):
            return "'arguments' is a string that is not valid JSON"
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return f"'arguments' must be an object, got {type(args).__name__}"
    return ToolCall(name=name.strip(), arguments=args)


def parse_output(text: str | None) -> ParsedOutput:
    """Split a completion into well-formed calls, malformed attempts and plain content.

    Parameters
    ----------
    text : str or None
        The model's decoded completion (special tokens already removed). ``None`` is read as "".

    Returns
    -------
    ParsedOutput
        ``calls`` in order of appearance, ``malformed`` reasons, ``content`` (text outside blocks).

    Examples
    --------
    >>> out = parse_output('ok <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>')
    >>> out.calls[0].name, out.calls[0].arguments, out.content
    ('f', {'x': 1}, 'ok')
    """
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    calls: list[ToolCall] = []
    malformed: list[str] = []
    content: list[str] = []
    pos = 0
    open_at: int | None = None
    for m in _TAG.finditer(text):
        if m.group() == OPEN_TAG:
            if open_at is not None:  # a new block opens before the previous one closed
                malformed.append("tool_call block opened inside another")
            else:
                content.append(text[pos:m.start()])
            open_at = m.end()
        else:
            if open_at is None:
                malformed.append("closing </tool_call> without an opening tag")
                content.append(text[pos:m.start()])
            else:
                decoded = _decode_call(text[open_at:m.start()])
                (calls if isinstance(decoded, ToolCall) else malformed).append(decoded)
                open_at = None
        pos = m.end()
    if open_at is not None:
        malformed.append("unterminated tool_call block")
    else:
        content.append(text[pos:])
    return ParsedOutput(calls=calls, malformed=malformed, content="".join(content).strip())


def parse_tool_calls(text: str | None) -> list[dict[str, Any]]:
    """The well-formed tool calls in ``text`` as ``{"name", "arguments"}`` dicts (malformed ones dropped).

    This is the shape :meth:`synth.envs.api.Environment.step` takes. Use :func:`parse_output` to
    also see malformed attempts.
    """
    return [c.model_dump() for c in parse_output(text).calls]


def format_tool_call(call: ToolCall | dict[str, Any]) -> str:
    """One call in the pinned text format (JSON on one line), e.g. for a reference continuation."""
    if isinstance(call, ToolCall):
        call = call.model_dump()
    payload = {"name": call["name"], "arguments": call.get("arguments") or {}}
    return f"{OPEN_TAG}{json.dumps(payload, ensure_ascii=False)}{CLOSE_TAG}"
