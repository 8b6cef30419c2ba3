"""The chat template: how conversations with tools become text (pinned interface 3).

train/ renders; eval/ parses model output (``eval.parsing.parse_tool_calls``). The format,
ChatML-like with Hermes-style tool calls::

    <|im_start|>system
    {system prompt}

    # Tools
    You may call functions. Their signatures, one JSON object per line:
    <tools>
    {"name": "...", "description": "...", "parameters": {...}}
    </tools>
    Call a function with <tool_call>{"name": <name>, "arguments": <JSON object>}</tool_call>.<|im_end|>
    <|im_start|>user
    {question}<|im_end|>
    <|im_start|>assistant
    <tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call><|im_end|>
    <|im_start|>tool
    <tool_response>{result}</tool_response><|im_end|>
    <|im_start|>assistant
    {final answer}<|im_end|>

Assistant turns (content, tool calls and the closing ``<|im_end|>``) sit inside
``{% generation %}`` markers, so ``return_assistant_tokens_mask=True`` (TRL's
``assistant_only_loss``) puts the loss on them only; system, user and tool turns are masked.
Tool-call arguments given as a JSON string (OpenAI format) are written verbatim, so
callers normalise them to one-line JSON first (:func:`normalize_messages`).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CHAT_TEMPLATE",
    "BOS_TOKEN",
    "EOS_TOKEN",
    "PAD_TOKEN",
    "SPECIAL_TOKENS",
    "TOOL_TOKENS",
    "GENERATION_PROMPT",
    "normalize_messages",
    "parse_tools",
    "render",
]

PAD_TOKEN = "<|endoftext|>"
"""Padding (and end of document) token."""
BOS_TOKEN = "<|im_start|>"
"""Opens every turn."""
EOS_TOKEN = "<|im_end|>"
"""Closes every turn; generation stops here."""
SPECIAL_TOKENS = (PAD_TOKEN, BOS_TOKEN, EOS_TOKEN)
"""Special tokens (skipped by ``decode(skip_special_tokens=True)``)."""
TOOL_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""Single-token tags that are NOT special: decoding keeps them, so eval can parse tool calls."""
GENERATION_PROMPT = "<|im_start|>assistant\n"
"""What ``add_generation_prompt=True`` appends."""

_NL = "{{- '\\n' -}}"

CHAT_TEMPLATE = "".join([
    "{%- set ns = namespace(system=none, start=0) -%}",
    "{%- if messages and messages[0]['role'] == 'system' -%}",
    "{%- set ns.system = messages[0]['content'] or '' -%}{%- set ns.start = 1 -%}",
    "{%- endif -%}",
    "{%- if tools or ns.system is not none -%}",
    "{{- '<|im_start|>system' -}}", _NL,
    "{%- if ns.system is not none -%}{{- ns.system -}}{%- if tools -%}", _NL, _NL, "{%- endif -%}{%- endif -%}",
    "{%- if tools -%}",
    "{{- '# Tools' -}}", _NL,
    "{{- 'You may call functions. Their signatures, one JSON object per line:' -}}", _NL,
    "{{- '<tools>' -}}", _NL,
    "{%- for tool in tools -%}",
    "{%- if tool['function'] is defined -%}{{- tool['function'] | tojson -}}{%- else -%}{{- tool | tojson -}}"
    "{%- endif -%}", _NL,
    "{%- endfor -%}",
    "{{- '</tools>' -}}", _NL,
    "{{- 'Call a function with <tool_call>{\"name\": <name>, \"arguments\": <JSON object>}</tool_call>.' -}}",
    "{%- endif -%}",
    "{{- '<|im_end|>' -}}", _NL,
    "{%- endif -%}",
    "{%- for message in messages[ns.start:] -%}",
    "{%- set content = message['content'] if message['content'] is defined and message['content'] is not none "
    "else '' -%}",
    "{%- if message['role'] == 'assistant' -%}",
    "{{- '<|im_start|>assistant' -}}", _NL,
    "{%- generation -%}",
    "{{- content -}}",
    "{%- if message['tool_calls'] is defined and message['tool_calls'] -%}",
    "{%- for call in message['tool_calls'] -%}",
    "{%- set fn = call['function'] if call['function'] is defined else call -%}",
    "{%- if content or not loop.first -%}", _NL, "{%- endif -%}",
    "{{- '<tool_call>{\"name\": ' -}}{{- fn['name'] | tojson -}}{{- ', \"arguments\": ' -}}",
    "{%- if fn['arguments'] is string -%}{{- fn['arguments'] -}}{%- else -%}{{- fn['arguments'] | tojson -}}"
    "{%- endif -%}",
    "{{- '}</tool_call>' -}}",
    "{%- endfor -%}",
    "{%- endif -%}",
    "{{- '<|im_end|>' -}}",
    "{%- endgeneration -%}", _NL,
    "{%- elif message['role'] == 'tool' -%}",
    "{{- '<|im_start|>tool' -}}", _NL,
    "{{- '<tool_response>' -}}{{- content -}}{{- '</tool_response><|im_end|>' -}}", _NL,
    "{%- else -%}",
    "{{- '<|im_start|>' + message['role'] -}}", _NL,
    "{{- content -}}{{- '<|im_end|>' -}}", _NL,
    "{%- endif -%}",
    "{%- endfor -%}",
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant' -}}", _NL, "{%- endif -%}",
])
"""The Jinja chat template stored in every tokenizer this package trains."""


def parse_tools(tools: str | list | None) -> list[dict[str, Any]] | None:
    """Tool schemas from a dataset row: the JSON string of pinned interface 1, a list, or None.

    Raises ``ValueError`` naming the problem when the string is not a JSON list.
    """
    if tools is None or tools == "":
        return None
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as err:
            raise ValueError(f"'tools' must be a JSON list of tool schemas, got unparsable JSON ({err})") from None
    if not isinstance(tools, list):
        raise ValueError(f"'tools' must be a list of tool schemas, got {type(tools).__name__}")
    return tools or None


def _one_line_json(arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return json.dumps(arguments, ensure_ascii=False)  # not JSON: keep it as a JSON string, still one line
    return json.dumps(arguments, ensure_ascii=False)


def normalize_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages ready for the template: None fields dropped, tool-call arguments as one-line JSON strings.

    Parameters
    ----------
    messages
        OpenAI-format messages (pinned interface 1); every message may carry ``content``,
        ``tool_calls``, ``tool_call_id`` and ``name``, null when unused.

    Returns
    -------
    list of dict
        New message dicts; the input is not modified.
    """
    out = []
    for message in messages:
        msg = {k: v for k, v in message.items() if v is not None}
        calls = msg.get("tool_calls")
        if calls:
            new_calls = []
            for call in calls:
                fn = dict(call.get("function") or {})
                fn["arguments"] = _one_line_json(fn.get("arguments", {}))
                new_calls.append({**{k: v for k, v in call.items() if v is not None}, "function": fn})
            msg["tool_calls"] = new_calls
        elif "tool_calls" in msg:
            del msg["tool_calls"]
        out.append(msg)
    return out


def render(messages: list[dict[str, Any]], tools: str | list | None = None, *,
           add_generation_prompt: bool = False) -> str:
    """The text of one conversation under :data:`CHAT_TEMPLATE`, without a tokenizer.

    Used to build the tokenizer's training corpus; identical to
    ``tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)``.
    """
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template([normalize_messages(messages)], tools=parse_tools(tools),
                                        chat_template=CHAT_TEMPLATE, add_generation_prompt=add_generation_prompt)
    return rendered[0]
