"""Symbolic provenance: trace every argument value of every tool call to the visible history.

An action (assistant tool call) is *derivable* when each leaf of its arguments object
appears in an observation the agent could see before acting: a user turn or the output of
an earlier tool call. System turns and the assistant's own text are not observations.
Matches are tried per observation, strongest first:

- ``exact``: the value's text occurs verbatim, on token boundaries (``"Paris"`` in
  ``"... Paris ..."``, ``42`` in ``"id 42,"`` but not in ``"1420"``);
- ``structured``: the observation parses as JSON and one of its leaves equals the value
  after type coercion (``"42"`` == ``42``, ``1.50`` == ``1.5``, escaped strings);
- ``normalised``: the value occurs after Unicode NFKC, case folding, whitespace collapse and
  thousands separators removed (``"new york"`` in ``"New  York"``, ``1000`` in ``"1,000"``).

Values the tool schema fixes (enum members, booleans, nulls, the declared default, empty
containers) match as ``schema``: the choice is visible in the system turn's tool list.
Anything else is ``none`` and makes the action non-derivable. Malformed argument JSON or
an unknown tool name make the action non-derivable with that status; a trace can only fail
towards *non*-derivable.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from probes.models import ActionProvenance, ArgumentSource, MatchKind, TrajectoryProvenance
from toolscale.errors import UsageError

__all__ = [
    "parse_row",
    "trace_trajectory",
    "trace_dataset",
    "exact_derivable",
    "iter_leaves",
    "match_value",
    "normalise_text",
    "ParsedRow",
]

_MATCH_RANK: dict[str, int] = {"exact": 3, "structured": 2, "normalised": 1}


class ParsedRow:
    """A trajectory row with ``tools`` and ``meta`` decoded (pinned interface 1)."""

    __slots__ = ("messages", "tools", "meta")

    def __init__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], meta: dict[str, Any]):
        self.messages = messages
        self.tools = tools
        self.meta = meta

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        """Tool name -> JSON schema of its parameters."""
        out: dict[str, dict[str, Any]] = {}
        for t in self.tools:
            fn = t.get("function", t) if isinstance(t, Mapping) else {}
            if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                params = fn.get("parameters")
                out[fn["name"]] = params if isinstance(params, Mapping) else {}
        return out


def _decode(value: Any, what: str, index: int, expected: type) -> Any:
    if value is None or value == "":
        return expected()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise UsageError(f"trajectory {index}: {what} is not valid JSON ({err.msg} at char {err.pos}); "
                             f"expected a JSON string of a {expected.__name__}") from None
    if not isinstance(value, expected):
        raise UsageError(f"trajectory {index}: {what} must be a {expected.__name__}, got {type(value).__name__}")
    return value


def parse_row(row: Mapping[str, Any], index: int = 0) -> ParsedRow:
    """Decode one JSONL row; raises :class:`UsageError` naming the row and the bad field."""
    if not isinstance(row, Mapping):
        raise UsageError(f"trajectory {index}: expected a JSON object with 'messages', got {type(row).__name__}")
    messages = row.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        raise UsageError(f"trajectory {index}: 'messages' must be a list of message objects, "
                         f"got {type(messages).__name__}")
    for j, m in enumerate(messages):
        if m.get("role") not in ("system", "user", "assistant", "tool"):
            raise UsageError(f"trajectory {index}: message {j} has role {m.get('role')!r}; "
                             "expected system, user, assistant or tool")
    tools = _decode(row.get("tools"), "'tools'", index, list)
    meta = _decode(row.get("meta"), "'meta'", index, dict)
    return ParsedRow([dict(m) for m in messages], tools, meta)


def normalise_text(text: str) -> str:
    """NFKC, case fold, thousands separators dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    return re.sub(r"\s+", " ", text).strip()


def iter_leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Leaves of a JSON value as ``(dotted path, value)``; empty containers are leaves."""
    if isinstance(obj, Mapping) and obj:
        for k, v in obj.items():
            yield from iter_leaves(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from iter_leaves(v, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, obj


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _bounded(needle: str, hay: str) -> bool:
    """``needle`` occurs in ``hay`` not glued to letters/digits on a side where it has one itself."""
    if not needle:
        return False
    left = r"(?<![\w.])" if re.match(r"[\w]", needle) else ""
    right = r"(?![\w]|\.\d)" if re.search(r"[\w]$", needle) else ""
    return re.search(left + re.escape(needle) + right, hay) is not None


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", "").strip())
        except ValueError:
            return None
    return None


def _json_leaves(text: str) -> list[Any] | None:
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return None
    out: list[Any] = []
    stack = [parsed]
    while stack:
        x = stack.pop()
        if isinstance(x, Mapping):
            stack.extend(x.values())
            out.extend(k for k in x.keys())
        elif isinstance(x, list):
            stack.extend(x)
        else:
            out.append(x)
    return out


def match_value(value: Any, content: str, *, leaves: list[Any] | None = None) -> MatchKind:
    """Strongest match of one argument value against one observation's text (``none`` if absent).

    ``leaves`` may pass the observation's parsed JSON leaves (computed once per observation).
    """
    text = _scalar_text(value)
    if _bounded(text, content):
        return "exact"
    num = _as_number(value)
    if leaves is None:
        leaves = _json_leaves(content)
    if leaves:
        norm = normalise_text(text)
        for leaf in leaves:
            if leaf is None or isinstance(leaf, bool) != isinstance(value, bool):
                continue
            lnum = _as_number(leaf)
            if num is not None and lnum is not None:
                if lnum == num:
                    return "structured"
            elif isinstance(leaf, str) and normalise_text(leaf) == norm:
                return "structured"
    norm_content = normalise_text(content)
    if _bounded(normalise_text(text), norm_content):
        return "normalised"
    if num is not None and not isinstance(value, bool):
        for tok in re.findall(r"-?\d+(?:\.\d+)?", norm_content):
            if float(tok) == num:
                return "normalised"
    return "none"


def _schema_fixes(schema: Mapping[str, Any], path: str, value: Any) -> bool:
    """True when the tool schema alone determines ``value`` (enum, boolean, null, default, empty)."""
    if value is None or isinstance(value, bool) or value in ([], {}, ""):
        return True
    node: Any = schema
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return False
        if node.get("type") == "array" or "items" in node:
            node = node.get("items", {}) if part.isdigit() else node.get("properties", {}).get(part)
        else:
            node = node.get("properties", {}).get(part)
    if not isinstance(node, Mapping):
        return False
    if "enum" in node and value in node["enum"]:
        return True
    return "default" in node and node["default"] == value


def _observation_text(msg: Mapping[str, Any]) -> str:
    content = msg.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def trace_trajectory(row: Mapping[str, Any] | ParsedRow, index: int = 0) -> TrajectoryProvenance:
    """Provenance of every tool call in one trajectory (a pure function of the row).

    Parameters
    ----------
    row : mapping or ParsedRow
        A JSONL row per pinned interface 1.
    index : int
        Row index, used in labels and error messages.

    Returns
    -------
    TrajectoryProvenance
        Per action: match kind and sources of each argument leaf, the supporting message
        indices, the parent actions (whose outputs support it) and the support depth
        ``depth(a) = 1 + max(depth(p) for p in parents(a))`` (1 without parents).
    """
    parsed = row if isinstance(row, ParsedRow) else parse_row(row, index)
    messages, schemas = parsed.messages, parsed.tool_schemas()
    injected = parsed.meta.get("nonderivable_calls")
    injected = [str(c) for c in injected] if isinstance(injected, list) else None

    obs: list[tuple[int, str, list[Any] | None]] = []  # (message index, text, parsed leaves)
    producer: dict[int, str] = {}  # tool message index -> call id that produced it
    depth_of: dict[str, int] = {}
    known_calls: set[str] = set()
    actions: list[ActionProvenance] = []
    problems: list[str] = []
    unnamed = 0
    for j, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user":
            text = _observation_text(msg)
            obs.append((j, text, _json_leaves(text)))
        elif role == "tool":
            cid = msg.get("tool_call_id")
            text = _observation_text(msg)
            if not text.strip():
                problems.append(f"empty tool output for {cid}")
            if cid not in known_calls:
                problems.append(f"tool output at message {j} answers unknown call id {cid!r}")
            else:
                producer[j] = str(cid)
            obs.append((j, text, _json_leaves(text)))
        elif role == "assistant":
            for call in msg.get("tool_calls") or []:
                unnamed += 1
                act = _trace_call(call, j, obs, producer, depth_of, schemas, f"call@{j}.{unnamed}")
                known_calls.add(act.call_id)
                depth_of[act.call_id] = act.depth
                actions.append(act)
    if not actions:
        problems.append("no actions")
    for a in actions:
        if a.status != "ok":
            problems.append(f"{a.call_id}: {a.reason}")
    task_id = parsed.meta.get("task_id")
    return TrajectoryProvenance(index=index, task_id=None if task_id is None else str(task_id), actions=actions,
                                injected=injected, problems=problems)


def _trace_call(call: Any, j: int, obs: Sequence[tuple[int, str, list[Any] | None]], producer: Mapping[int, str],
                depth_of: Mapping[str, int], schemas: Mapping[str, Mapping[str, Any]],
                fallback_id: str) -> ActionProvenance:
    call = call if isinstance(call, Mapping) else {}
    cid = str(call.get("id") or fallback_id)
    fn = call.get("function") if isinstance(call.get("function"), Mapping) else {}
    name = fn.get("name") if isinstance(fn.get("name"), str) else ""
    raw = fn.get("arguments", "{}")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        args = None
    if not isinstance(args, Mapping):
        return ActionProvenance(call_id=cid, tool=name, message_index=j, status="malformed_arguments",
                                derivable=False, reason=f"arguments are not a JSON object: {str(raw)[:60]!r}")
    schema = schemas.get(name, {})
    sources_all: set[int] = set()
    leaves: list[ArgumentSource] = []
    for path, value in iter_leaves(args):
        best: MatchKind = "none"
        srcs: list[int] = []
        for k, text, jl in obs:
            m = match_value(value, text, leaves=jl)
            if m != "none":
                srcs.append(k)
                if best == "none" or _MATCH_RANK[m] > _MATCH_RANK[best]:
                    best = m
        if best == "none" and _schema_fixes(schema, path, value):
            best = "schema"
        leaves.append(ArgumentSource(path=path, value=json.dumps(value, ensure_ascii=False), match=best,
                                     sources=srcs))
        sources_all.update(srcs)
    parents = sorted({producer[k] for k in sources_all if k in producer})
    depth = 1 + max((depth_of.get(p, 1) for p in parents), default=0)
    untraced = next((a for a in leaves if a.match == "none"), None)
    status = "ok"
    reason = None if untraced is None else f"argument {untraced.path}={untraced.value} not in visible history"
    if schemas and name not in schemas:
        status, reason = "unknown_tool", f"unknown tool {name!r}"
    elif not name:
        status, reason = "malformed_arguments", "tool call has no function name"
    return ActionProvenance(call_id=cid, tool=name, message_index=j, status=status,
                            derivable=status == "ok" and untraced is None, arguments=leaves,
                            supports=sorted(sources_all), parents=parents, depth=max(depth, 1), reason=reason)


def exact_derivable(action: ActionProvenance) -> bool:
    """Derivable by exact matching alone: every argument traced ``exact``, ``structured`` or ``schema``.

    The verdict of a plain exact-match provenance check (the one synth labels with), without the
    ``normalised`` tier's case folding and whitespace collapse.
    """
    return action.derivable and all(a.match in ("exact", "structured", "schema") for a in action.arguments)


def trace_dataset(rows: Sequence[Mapping[str, Any] | ParsedRow]) -> list[TrajectoryProvenance]:
    """:func:`trace_trajectory` for every row (row index = position)."""
    return [trace_trajectory(r, i) for i, r in enumerate(rows)]
