"""Copy drills for the RL warm start: random ids repeated across the episodes' own copy distances (issue 32).

A policy earns F1 only if its calls copy ids (an order number, an event id) from the question or an observation
into the arguments. A tiny proxy learns that copy from episodes alone too slowly to use it, and a drill at one fixed
offset teaches a copy that works only at that offset. :func:`drill_rows` writes SFT rows that train the copy at the
distances the golden episodes need: each turn gives a list of fresh ids shaped like the episodes' copied values,
then a slice of episode text, and the assistant repeats the list. :func:`copy_distances` measures those distances.

Pure: rows and a tokenizer in, numbers and rows out.
"""

from __future__ import annotations

import bisect
import json
import random
import re
from collections.abc import Sequence
from typing import Any

from train.chat import render

__all__ = ["copied_values", "copy_distances", "drill_rows", "shaped_like", "DRILL_PREFIX", "IDS_PER_DRILL"]

DRILL_PREFIX = "drill-"
"""``meta.task_id`` prefix of a drill row."""
IDS_PER_DRILL = 8
"""Fresh ids in one drill's list."""
_CALL = re.compile(r"<tool_call>.*?</tool_call>", re.S)


def copied_values(row: dict[str, Any]) -> list[str]:
    """String argument values (3 characters or more) of the row's tool calls, in call order, with repeats."""
    out = []
    for msg in row["messages"]:
        for call in msg.get("tool_calls") or []:
            args = call["function"].get("arguments") or {}
            args = json.loads(args) if isinstance(args, str) else args
            out += [v for v in args.values() if isinstance(v, str) and len(v) >= 3]
    return out


def copy_distances(row: dict[str, Any], tokenizer: Any) -> list[int]:
    """Token distances, one per copied value, from the value's nearest earlier occurrence (the question, an
    observation, an earlier call) to where a tool call writes it, both measured at the value's first token.

    Values that a call writes before they appear anywhere are not copies and give no distance. The text is the
    row under the chat template (:func:`train.chat.render`); ``tokenizer`` must be a fast tokenizer (offsets).
    """
    text = render(row["messages"], row.get("tools"))
    starts = [a for a, _ in tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]
    token_at = lambda c: bisect.bisect_right(starts, c) - 1  # noqa: E731 - index of the token holding char c
    out = []
    for span in _CALL.finditer(text):
        for value in dict.fromkeys(copied_values(row)):
            at = text.find(value, span.start(), span.end())
            source = text.rfind(value, 0, span.start())
            if at >= 0 and source >= 0:
                out.append(token_at(at) - token_at(source))
    return out


def shaped_like(value: str, rng: random.Random) -> str:
    """A fresh id of ``value``'s shape: each letter a random letter of the same case, each digit a random digit,
    every other character kept (``OR-1502`` -> ``KW-7381``)."""
    def one(c: str) -> str:
        if c.isdigit():
            return rng.choice("0123456789")
        if c.isascii() and c.isalpha():
            return rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c.isupper() else "abcdefghijklmnopqrstuvwxyz")
        return c
    return "".join(one(c) for c in value)


def drill_rows(rows: Sequence[dict[str, Any]], tokenizer: Any, *, turns: int, seed: int = 0) -> list[dict[str, Any]]:
    """One drill row per row of ``rows`` (golden episodes), each of ``turns`` user/assistant turns.

    Each turn: the user gives :data:`IDS_PER_DRILL` fresh ids shaped like the episodes' copied values
    (:func:`shaped_like`), then a slice of the episodes' text (at a random place); the assistant repeats the ids. The slice is
    sized so that the repeat starts a distance drawn from the episodes' :func:`copy_distances` after the list's
    start (within a token or two; right after the list when the list alone is longer). Deterministic in ``seed``. Rows are pinned-interface-1 trajectory rows with no
    tools and ``meta.task_id`` starting with :data:`DRILL_PREFIX`. Raises ``ValueError`` if no episode copies a
    value (nothing to drill) or ``turns`` < 1.
    """
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 1:
        raise ValueError(f"copy drills need turns >= 1, got {turns!r}")
    values = [v for r in rows for v in copied_values(r)]
    distances = [d for r in rows for d in copy_distances(r, tokenizer)]
    if not values or not distances:
        raise ValueError("no golden episode copies a value into a call: nothing to drill")
    encode = lambda r: tokenizer(render(r["messages"], r.get("tools")), add_special_tokens=False)["input_ids"]  # noqa: E731
    stream = [t for r in rows for t in encode(r)]
    rng = random.Random(f"drills:{seed}")
    out = []
    for n in range(len(rows)):
        messages = []
        for _ in range(turns):
            ids = " ".join(shaped_like(rng.choice(values), rng) for _ in range(IDS_PER_DRILL))
            user = _padded(ids, rng.choice(distances), stream, rng, tokenizer)
            messages += [_msg("user", user), _msg("assistant", ids)]
        out.append({"messages": messages, "tools": "[]",
                    "meta": json.dumps({"task_id": f"{DRILL_PREFIX}{seed}-{n:05d}", "drill": True})})
    return out


def _msg(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "content": content, "tool_calls": None, "tool_call_id": None, "name": None}


def _padded(ids: str, distance: int, text: list[int], rng: random.Random, tokenizer: Any) -> str:
    """The user turn: ``ids``, then a slice of ``text`` (token ids) that puts the repeat ``distance`` tokens after
    the list's start, within a token or two (decoding a slice can merge tokens: grown up to 3 times to make up)."""
    start, size, user = None, 0, ids
    for _ in range(4):
        short = distance - _repeat_distance(user, ids, tokenizer)
        if short <= 0:
            break
        size += short
        start = rng.randint(0, max(0, len(text) - size)) if start is None else min(start, max(0, len(text) - size))
        filler = tokenizer.decode(text[start:start + size], skip_special_tokens=True)
        user = f"{ids}\n{filler}" if filler else ids
    return user


def _repeat_distance(user: str, ids: str, tokenizer: Any) -> int:
    """Tokens from the start of ``ids`` (which opens the ``user`` turn) to its repeat in the assistant's reply."""
    text = render([_msg("user", user), _msg("assistant", ids)])
    starts = [a for a, _ in tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]
    first = text.index(ids)
    return bisect.bisect_right(starts, text.rindex(ids)) - bisect.bisect_right(starts, first)
